"""What a hint rule sees: the failure, its text, the project root, and where the error was raised."""

from __future__ import annotations

import re
from pathlib import Path

from .result_models import TestFailure

_DEPENDENCY_PATH = re.compile(
    r"node_modules|site-packages|dist-packages|/lib/python\d|^node:|^internal/|<frozen|/rustc/|/usr/lib/go|/usr/local/go|/\.cargo/registry|/\.venv/|/_pytest/|/pluggy/"
)
_PY_FRAME = re.compile(r'^(?:\s*File "(?P<p1>[^"]+)", line (?P<l1>\d+)|(?P<p2>[^\s:"]+\.py):(?P<l2>\d+): )', re.M)
_OTHER_FRAME = re.compile(r"(?P<p>(?:/|\.{1,2}/|\b[\w.-]+/)?[\w./@+-]+\.(?:[cm]?[jt]sx?|go|rs)):(?P<l>\d+)(?::\d+)?")


class HintContext:
    def __init__(self, failure: TestFailure, root: Path | None) -> None:
        self.failure = failure
        self.evidence = without_source(failure.detail)
        self.text = f"{failure.message}\n{self.evidence}"
        self.root = root

    @property
    def where(self) -> str:
        """` (raised at src/x.py:12)` for the innermost frame outside the test file and dependencies."""
        frame = source_frame(self.text, self.failure.file, self.root)
        return f" (at {frame})" if frame else ""


def error_type(ctx: HintContext) -> str | None:
    """The exception class named in the message (else the detail), AssertionError aside."""
    for text in (ctx.failure.message, ctx.evidence):
        for error in re.findall(r"\b([A-Z]\w*(?:Error|Exception))\b", text):
            if error != "AssertionError":
                return error
    return None


# pytest's long traceback: `>` marks the failing line, `E ` the exception, `path:N: Type` the location;
# every other indented line is quoted source code
_PYTEST_KEPT = re.compile(r"^(?:E\s|\S+:\d+: |_{3,}|\[\w+\]$|-{3,})")
_PY_FILE_LINE = re.compile(r'^\s*File "[^"]+", line \d+')


def without_source(detail: str) -> str:
    """The error text without the source code that tracebacks quote.

    Hints are derived from what happened (the raised exception, its message, the frames), never from a
    test's source text: `except ImportError:` quoted from a guard does not mean an ImportError was raised.
    Python tracebacks quote one source line under each `File "...", line N`; pytest's long format quotes
    whole functions (kept: `E ` lines, `path:N:` locations, section rules).
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


def source_frame(text: str, test_file: str | None, root: Path | None) -> str | None:
    """`path:line` of the innermost stack frame that is neither a dependency nor the test file itself."""
    frames: list[tuple[str, str]] = [
        (m.group("p1") or m.group("p2"), m.group("l1") or m.group("l2")) for m in _PY_FRAME.finditer(text)
    ]
    if frames:
        frames.reverse()  # Python tracebacks list the innermost frame last
    else:
        frames = [(m.group("p"), m.group("l")) for m in _OTHER_FRAME.finditer(text)]
    for path, line in frames:
        if _DEPENDENCY_PATH.search(path) or (test_file and path.endswith(test_file.lstrip("./"))):
            continue
        return f"{short_path(path, root)}:{line}"
    return None


def short_path(path: str, root: Path | None) -> str:
    if root is not None:
        prefix = str(root.resolve()) + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path.removeprefix("file://")
