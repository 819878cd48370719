"""What a hint rule sees: the failure, its text, the project root, the code on the failing path, and where
each raised error was raised.

Locations come from the failure's own frames: an error's place is the innermost frame of *its own*
traceback (a chained `KeyError` is placed where the `KeyError` was raised, not where the exception that
wraps it was). The code on the failing path is what the runner printed of it (pytest's `>` lines, a
traceback's quoted lines) and the statement at the failure's own file and line.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path, PurePosixPath

from .assertions import WHERE_LINE
from .result_models import TestFailure
from .rust_source import source_lines

DEPENDENCY_PATH = re.compile(
    r"node_modules|site-packages|dist-packages|/lib/python\d|^node:|^internal/|<frozen|/rustc/|/usr/lib/go|/usr/local/go|/\.cargo/registry|/\.venv/|/_pytest/|/pluggy/"
)
_PACKAGE_DIR = re.compile(r"(?:node_modules|site-packages|dist-packages)/")
_PY_FRAME = re.compile(r'^(?:\s*File "(?P<p1>[^"]+)", line (?P<l1>\d+)|(?P<p2>[^\s:"]+\.py):(?P<l2>\d+): )', re.M)
_OTHER_FRAME = re.compile(r"(?P<p>(?:/|\.{1,2}/|\b[\w.-]+/)?[\w./@+-]+\.(?:[cm]?[jt]sx?|go|rs)):(?P<l>\d+)(?::\d+)?")
# where one exception's traceback ends and the next one's begins (Python's chained exceptions)
_CHAIN = re.compile(
    r"^(?:During handling of the above exception, another exception occurred:|"
    r"The above exception was the direct cause of the following exception:)\s*$",
    re.M,
)
# the code the runner printed: pytest's `>` lines and the line a Python traceback quotes under each frame
_PRINTED_CODE = re.compile(r'^>\s+(?P<a>\S.*)$|^\s*File "[^"]+", line \d+, in \S+\n\s+(?P<b>\S.*)$', re.M)


class HintContext:
    def __init__(self, failure: TestFailure, root: Path | None) -> None:
        self.failure = failure
        self.evidence = without_source(failure.detail)
        self.text = f"{failure.message}\n{self.evidence}"
        self.root = root

    @property
    def where(self) -> str:
        """` (at src/x.py:12)`: the innermost frame outside the test file and dependencies of the final error."""
        frame = source_frame(_last_segment(self.text), self.failure.file, self.root)
        return f" (at {frame})" if frame else self.own_place

    @property
    def own_place(self) -> str:
        """` (at test/x.test.js:33)`: the failure's own file and line, when no frame outside the test says more (a
        doc test's line is its generated test's, not a place in the file, so it is left out)."""
        f = self.failure
        if not f.file or not f.line or " - " in f.name and "(line " in f.name:
            return ""
        return f" ({'in the test declared ' if f.declared else ''}at {short_path(f.file, self.root)}:{f.line})"

    def segment_of(self, match: re.Match[str]) -> str:
        """The traceback of the error `match` found (its own, between chained-exception separators)."""
        if match.string is self.evidence and _PY_FRAME.search(self.evidence):
            return _segment_at(self.evidence, match.start())
        return _last_segment(self.text)  # in the message: the final error; other stacks follow their error

    def where_of(self, match: re.Match[str]) -> str:
        """` (at src/x.py:12)` for the error `match` found: the innermost frame of that error's own traceback."""
        frame = source_frame(self.segment_of(match), self.failure.file, self.root)
        return f" (at {frame})" if frame else self.own_place

    def thrown_in_dependency(self, match: re.Match[str]) -> str | None:
        """`path:line` of the innermost frame of the error's own traceback (where it was thrown) when that frame is a
        dependency's: the project's frame `where_of` names then only called it."""
        found = frames(self.segment_of(match))
        if not found or not DEPENDENCY_PATH.search(found[0][0]):
            return None
        return self._named(*found[0])

    def raise_site(self, error: str) -> str | None:
        """`path:line` of the innermost frame of the traceback that ends in `error` (where it was raised), read from
        that error's own traceback among chained ones; None when the output holds no frame for it."""
        match = re.compile(rf"^\s*(?:E\s+)?{re.escape(error)}(?::|\s*$)", re.M).search(self.evidence)
        if match is None:
            return None
        segment = self.segment_of(match)
        if not _PY_FRAME.search(segment):  # a JavaScript/Go/Rust stack: the error line, then its frames innermost first
            found = frames(segment)
            return self._named(*found[0]) if found else None
        # pytest names the raising entry's place with the error's class (`iso8601/iso8601.py:154: ParseError`); a
        # Python traceback's innermost frame is the last one before the error's own line (a clipped text may lack both)
        short = re.escape(error.rsplit(".", 1)[-1])
        located = re.search(rf'^(?P<p>[^\s:"]+\.py):(?P<l>\d+): {short}\s*$', segment, re.M)
        if located is not None:
            return self._named(located["p"], located["l"])
        at = segment.find(match.group(0).strip())
        found = [m for m in _PY_FRAME.finditer(segment[: max(at, 0)]) if m["p1"]]
        return self._named(found[-1]["p1"], found[-1]["l1"]) if found else None

    def _named(self, path: str, line: str) -> str:
        """A frame's `path:line`, never a machine's path: a package's file from its package folder, another file
        outside the project (the language's own library) by its name."""
        package = list(_PACKAGE_DIR.finditer(path))
        if package:
            return f"{path[package[-1].start() :]}:{line}"
        shown = short_path(path, self.root)
        return f"{PurePosixPath(shown).name if shown.startswith('/') else shown}:{line}"

    @cached_property
    def code(self) -> str:
        """The code on the failing path: what the runner printed of it, and the statement at the failure's own
        file and line (read from the project, one line)."""
        printed = [m["a"] or m["b"] for m in _PRINTED_CODE.finditer(self.failure.detail or "")]
        own = statement_at(self.root, self.failure.file, self.failure.line)
        return "\n".join([*printed, *([own] if own else [])])

    @cached_property
    def explained(self) -> str:
        """pytest's `where` explanations: the expressions whose values the assertion compared (`total([1, 2])`)."""
        return "\n".join(expr for _, expr in self.where_lines)

    @property
    def where_lines(self) -> list[tuple[str, str]]:
        """pytest's `where` lines as (the value printed, the expression it is the value of)."""
        return [(m["value"], m["expr"]) for m in WHERE_LINE.finditer(f"{self.failure.message}\n{self.failure.detail}")]


def project_lines(root: Path | None, file: str | None) -> list[str] | None:
    """The lines of a file of the project (None outside it, or when it cannot be read)."""
    if root is None or not file or file.startswith("/") or ".." in Path(file).parts:
        return None
    return source_lines(root, file)


def statement_at(root: Path | None, file: str | None, line: int | None) -> str | None:
    """The source line at `file:line` of the project (None outside it, or when it cannot be read)."""
    lines = project_lines(root, file) if line else None
    if lines is None or not 0 < line <= len(lines):
        return None
    return lines[line - 1].strip()[:400] or None


# an exception class as a traceback names it: `KeyError`, `json.decoder.JSONDecodeError`, `re.error`
_ERROR_NAME = re.compile(r"(?<![\w.])((?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)|(?:[a-z_]\w*\.)+error)\b")


# an exception as a traceback or a stack prints it: at the start of a line, then `:` or the line's end
_LEADING_ERROR = re.compile(r"^\s*(?:E\s+)?(?:error in \w+: )?(?:Uncaught\s+)?" + _ERROR_NAME.pattern + r"(?=:|\s*$| \[)", re.M)


def error_type(ctx: HintContext) -> str | None:
    """The exception class the message (else the detail) reports, AssertionError aside: a name at the start of a
    line, as a traceback prints the raised exception (a name quoted inside a value, `name: 'TypeError'`, is not
    one)."""
    for text in (ctx.failure.message, ctx.evidence):
        for error in _LEADING_ERROR.findall(text):
            if error != "AssertionError":
                return error
    return None


# pytest's long traceback: `>` marks the failing line, `E ` the exception, `path:N: Type` the location;
# every other indented line is quoted source code
_PYTEST_KEPT = re.compile(r"^(?:E\s|\S+:\d+: |_{3,}|\[\w+\]$|-{3,}|During handling|The above exception)")
_PY_FILE_LINE = re.compile(r'^\s*File "[^"]+", line \d+')


def without_source(detail: str) -> str:
    """The error text without the source code that tracebacks quote.

    Hints are derived from what happened (the raised exception, its message, the frames), never from a
    test's source text: `except ImportError:` quoted from a guard does not mean an ImportError was raised.
    Python tracebacks quote one source line under each `File "...", line N`; pytest's long format quotes
    whole functions (kept: `E ` lines, `path:N:` locations, section rules, chained-exception separators).
    """
    if not detail:
        return ""
    lines = detail.splitlines()
    if any(line.startswith("E ") for line in lines):
        return "\n".join(line for line in lines if _PYTEST_KEPT.match(line))
    kept: list[str] = []
    after_file = False
    for line in lines:
        if after_file and line.startswith("    ") and not _PY_FILE_LINE.match(line):
            after_file = False
            continue  # the quoted source line of the frame above
        after_file = bool(_PY_FILE_LINE.match(line))
        kept.append(line)
    return "\n".join(kept)


# a stack frame's whole line: JS's `at f (src/x.js:3:5)` / `at src/x.js:3:5`, Python's `File "x.py", line 3, in f`,
# Go's `goroutine 7 [running]:` and its frames' tab-indented `/src/x.go:12 +0x1d`
_STACK_LINE = re.compile(
    r'^\s*(?:at\s.*(?:\(.*\)|:\d+(?::\d+)?)\s*|File "[^"\n]+", line \d+.*|goroutine \d+ \[.*|\S+\.go:\d+(?: \+0x[0-9a-f]+)?)$',
    re.M,
)
# a location or a path printed in a line: `src/index.spec.ts:16:34`, `tests/test_x.py:9`, `lib/util/index.js`,
# `/usr/lib/node`, `index.js:4` (not a quotient: `size/2`)
_LOCATION = re.compile(
    r"(?:\.{0,2}/)?(?:[\w.@+-]+/)+[\w@+-]+\.[A-Za-z]\w*(?::\d+)*|/(?:[\w.@+-]+/)+[\w.@+-]*|"
    r"\b[\w.@+-]+\.(?:py|[cm]?[jt]sx?|go|rs)(?::\d+)+"
)


def without_locations(text: str) -> str:
    """Printed text without its stack frames, locations and file paths: the words a premise reads from what a runner
    printed are the message's, never a file's name (jest's `at Object.toEqual (src/index.spec.ts:16:34)` names no
    index)."""
    return _LOCATION.sub(" ", _STACK_LINE.sub("", text))


def _segment_at(text: str, position: int) -> str:
    """The traceback (between chained-exception separators) that holds `position`."""
    start, end = 0, len(text)
    for sep in _CHAIN.finditer(text):
        if sep.start() < position:
            start = sep.end()
        else:
            end = sep.start()
            break
    return text[start:end]


def _last_segment(text: str) -> str:
    separators = list(_CHAIN.finditer(text))
    if not separators:
        return text
    head = text[: text.find("\n") + 1] if "\n" in text else ""  # the message line stays with the final error
    return head + text[separators[-1].end() :]


def frames(text: str) -> list[tuple[str, str]]:
    """The stack frames (path, line) of a traceback, innermost first (Python lists it last, the others first)."""
    found: list[tuple[str, str]] = [
        (m.group("p1") or m.group("p2"), m.group("l1") or m.group("l2")) for m in _PY_FRAME.finditer(text)
    ]
    if found:
        return found[::-1]
    return [(m.group("p"), m.group("l")) for m in _OTHER_FRAME.finditer(text)]


def source_frame(text: str, test_file: str | None, root: Path | None) -> str | None:
    """`path:line` of the innermost stack frame that is neither a dependency nor the test file itself."""
    for path, line in frames(text):
        if DEPENDENCY_PATH.search(path) or (test_file and path.endswith(test_file.lstrip("./"))):
            continue
        return f"{short_path(path, root)}:{line}"
    return None


def short_path(path: str, root: Path | None) -> str:
    if root is not None:
        prefix = str(root.resolve()) + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path.removeprefix("file://")
