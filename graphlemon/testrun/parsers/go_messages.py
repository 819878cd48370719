"""What a failing Go test said: whole t.Errorf messages, Go's got/want conventions, and timeouts.

`go test` prints a t.Errorf/t.Fatalf message as `    file_test.go:12: first line` followed by its
other lines indented four more spaces; all of them are the message. Expected/got follow the Go
conventions (https://go.dev/wiki/CodeReviewComments#useful-test-failures):
`F(x) = 3, want 4`, `got X, want Y`, `got:\\n...\\nwant:\\n...` blocks, and go-cmp's
`(-want +got)` diffs (whose want and got sides are rebuilt from the diff's lines). A
`panic: test timed out after 3s` names the tests it stopped: go ≥ 1.20 lists them under
`running tests:`, older versions leave them started and never ended, with their frame in the
goroutine dump.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..assertions import VALUE_CHARS, Compared, compared_in, sided, split_proven, whole_value
from ..output_text import clip, labelled_pairs

_LOCATION = re.compile(r"^(?P<indent>\s+)(?P<file>[\w./-]+\.go):(?P<line>\d+): (?P<message>.*)$")


@dataclass(frozen=True)
class LogMessage:
    file: str
    line: int
    text: str  # the whole message, its lines joined by "\n"


def log_messages(lines: list[str]) -> list[LogMessage]:
    """Each `file.go:N: message` of a test's output with the lines that continue it."""
    found: list[LogMessage] = []
    current: tuple[str, str, int, list[str]] | None = None  # indent, file, line, message lines
    for raw in lines:
        match = _LOCATION.match(raw)
        if match:
            if current:
                found.append(LogMessage(current[1], current[2], "\n".join(current[3])))
            current = (match["indent"] + "    ", match["file"], int(match["line"]), [match["message"]])
        elif current and raw.startswith(current[0]):
            current[3].append(raw[len(current[0]) :])
        elif current:
            found.append(LogMessage(current[1], current[2], "\n".join(current[3])))
            current = None
    if current:
        found.append(LogMessage(current[1], current[2], "\n".join(current[3])))
    return found


def example_output(after_result: str) -> str | None:
    """An Example test's failure as go's testing prints it on the lines after its `--- FAIL` line: exactly
    `got:\n<output>\nwant:\n<output>` (the whole block, read by `_BLOCKS`); None for any other text."""
    text = after_result.lstrip("\n")
    if not text.startswith("got:\n") or not re.search(r"^want:$", text, re.M):
        return None
    return text.rstrip("\n")


# `got 500, want 401`, `Sum(x) = 3; got 3, want 6`, `got 3 expected 4`
_GOT_WANT = re.compile(r"\b[gG]ot:?\s+(?P<g>\S.*?)[,;]?\s+(?:want(?:ed)?|expected):?\s+(?P<e>\S.*?)\s*$", re.M)
# `Len() = 3, want 4`, `Sum([1 2]) = 3; want 4` (the call is the first part of the message)
# and without spaces after a call: `WordSeries(["a" "b"], "and")="a, and b"; want: "a and b"`
_CALL_EQUALS = re.compile(r"^(?P<call>.*?\S)(?: = |(?<=\))=)(?P<g>.+?)[,;] want:? (?P<e>.+?)\s*$", re.M)
# `Min() => -10 != -10.001`, `Max([1 2]) => 4.0 != 5.0`: the call printed with what it returned (the got side), then
# the value it is compared with; read in the first line only and only when each side is one whole value
_CALL_ARROW = re.compile(r"\A(?P<call>[^\n]*?\S\)) => (?P<g>[^\n]+?) != (?P<e>[^\n]+?)[ \t]*$", re.M)
# `ComputeDistance("hello","") returned 0, want 5`: the test's own words name the sides (read only when each side is
# one whole value: `returned 3 items, want 4` is not)
_RETURNED_WANT = re.compile(r"\breturned:? (?P<g>\S.*?)[,;]? (?:want(?:ed)?|expected):? (?P<e>\S.*?)\s*$", re.M)
# `want MX` (or `expected MX`) above `got  XXY` (got above want is _GOT_WANT), as a multi-line t.Errorf writes them
_LINE_PAIR_WANT_FIRST = re.compile(r"^\s*(?:want|expected):?[ \t]+(?P<e>\S.*?)\s*\n\s*got:?[ \t]+(?P<g>\S.*?)\s*$", re.M)
# `got:\n<block>\nwant:\n<block>` (either order): the blocks run to the next label or the end
_BLOCKS = re.compile(r"^\s*got:\s*\n(?P<g>(?:.*\n)*?)\s*want:\s*\n(?P<e>(?:.*\n?)*)", re.M)
_BLOCKS_WANT_FIRST = re.compile(r"^\s*want:\s*\n(?P<e>(?:.*\n)*?)\s*got:\s*\n(?P<g>(?:.*\n?)*)", re.M)
_LABELLED_BLOCKS = (_BLOCKS, _BLOCKS_WANT_FIRST)  # each value is the lines under its own label: its words are its own
_BLOCK_LABEL = re.compile(r"\s*(?:got|want):[ \t]*\n")  # a message whose first line is one block's label alone
_DIFF_HEADER = re.compile(
    r"\((?P<first>[-+])(?P<a>want|got|expected|actual) (?P<second>[-+])(?P<b>want|got|expected|actual)\)"
)
_DIFF_LINE = re.compile(r"^(?P<mark>[-+ ])[ \u00a0](?P<text>.*)$")


# a Go string literal as `%q` prints it (interpreted, its escapes kept) or a raw one (backquoted): its lexical grammar
_GO_LITERAL = r'"(?:[^"\\\n]|\\.)*"|`[^`]*`'
_LITERAL = re.compile(_GO_LITERAL)
_SIDE_WORDS = re.compile(r"\b(?:got|want|wanted|expected|expect|actual)\b", re.I)  # outside the literals


def go_compared(message: str, first: str | None = None) -> Compared | None:
    """The two values of a Go test's message with their sides, by the conventions above, else the shared
    dialects (where a side is named only when the message names it). Written as Go prints them (`%v`).
    `first`: the test's first log message alone (a literal pair is read in it, not across messages). A message
    that printed several expected/got pairs is read in its first pair only."""
    pairs = labelled_pairs(message)
    if pairs is not None:
        message = pairs[0]
        first = message if first is None or len(first) > len(message) else first
    diff = diff_sides(message)
    if diff is not None:
        return sided(diff[0], diff[1], "go", ("want", "got"))
    pair = literal_pair(message if first is None else first)
    if pair is not None:
        return pair
    for pattern in (_BLOCKS, _BLOCKS_WANT_FIRST, _GOT_WANT, _CALL_EQUALS, _LINE_PAIR_WANT_FIRST, _RETURNED_WANT):
        match = pattern.search(message)
        if match and pattern is _RETURNED_WANT and not (whole_value(match["g"]) and whole_value(match["e"])):
            continue
        if match and (pattern in _LABELLED_BLOCKS or split_proven(match["e"], match["g"])):
            expected, got = match["e"].rstrip("\n"), match["g"].rstrip("\n")
            if expected.strip() and got.strip() and expected != got:
                return sided(clip(expected, VALUE_CHARS), clip(got, VALUE_CHARS), "go", ("want", "got"))
    arrow = _CALL_ARROW.match(message)
    if arrow and whole_value(arrow["g"]) and whole_value(arrow["e"]) and arrow["g"] != arrow["e"]:
        return sided(clip(arrow["e"], VALUE_CHARS), clip(arrow["g"], VALUE_CHARS), "go", ("want", "got"))
    found = compared_in(message)
    if found is not None and found.labels == ("first", "second"):  # `a != b` in a Go message: Go printed both
        if not (whole_value(found.first) and whole_value(found.second)):
            return None  # `mismatch "a" != "b" != "c"`: where a value ends is not certain
        return replace(found, grammar="go")
    return replace(found, grammar="go") if found is not None and found.grammar == "any" else found


def literal_pair(message: str) -> Compared | None:
    """`t.Errorf("mismatch %q != %q", a, b)`: two quoted literals on either side of `!=` are the two values, each
    as its whole literal (the test's own words outside the quotes are never part of one). Go's testing names no
    side, and neither does `!=`: unless the words outside the literals say got/want (then the conventions above
    read them), the values are the first and the second as printed."""
    literals = list(_LITERAL.finditer(message))  # read left to right, so a closing quote never opens a literal
    pairs = [(a, b) for a, b in zip(literals, literals[1:], strict=False)
             if re.fullmatch(r"\s*!=\s*", message[a.end() : b.start()])]  # fmt: skip
    if len(pairs) != 1 or pairs[0][0][0] == pairs[0][1][0]:
        return None
    if _SIDE_WORDS.search(_LITERAL.sub(" ", message)):
        return None
    return Compared(pairs[0][0][0], pairs[0][1][0], ("first", "second"), None, "go")


def diff_sides(message: str) -> tuple[str, str] | None:
    """A `(-want +got)` diff's two sides: the want side is its ` ` and `-` lines, the got side its ` ` and `+` lines."""
    lines = _diff_lines(message)
    if lines is None:
        return None
    want = [text for mark, text in lines if mark != "got"]
    got = [text for mark, text in lines if mark != "want"]
    if want == got:
        return None
    return clip("\n".join(want), VALUE_CHARS), clip("\n".join(got), VALUE_CHARS)


def changed_lines(message: str) -> tuple[list[str], list[str]]:
    """A diff's lines only on the want side and only on the got side (marks dropped), for a hint that names them."""
    lines = _diff_lines(message) or []
    return [t.strip() for m, t in lines if m == "want"], [t.strip() for m, t in lines if m == "got"]


def _opens_with_blocks(message: str) -> bool:
    """The message opens with a got/want block (`got:\n…\nwant:\n…`: an Example's output, a t.Errorf of two printed
    blocks; its second label may be cut off with the message). What lies in the blocks is printed data: a diff
    header or `+`/`-` lines there are the values' own text, never the runner's diff of the two (each block is one
    whole value, compared as such)."""
    return _BLOCK_LABEL.match(message) is not None


def _diff_lines(message: str) -> list[tuple[str, str]] | None:
    """The diff after a `(-want +got)` header as (side, text): side is `want`, `got` or `both`."""
    header = _DIFF_HEADER.search(message)
    if header is None or _opens_with_blocks(message):
        return None
    minus_label = header["a"] if header["first"] == "-" else header["b"]
    minus, plus = ("want", "got") if minus_label in ("want", "expected") else ("got", "want")
    side = {"-": minus, "+": plus, " ": "both"}
    return [(side[m["mark"]], m["text"]) for m in map(_DIFF_LINE.match, message[header.end() :].splitlines()) if m]


_TIMED_OUT = re.compile(r"^panic: test timed out after (?P<after>\S+)", re.M)
_RUNNING_LIST = re.compile(r"^running tests:\n(?P<list>(?:\t.+\n?)+)", re.M)
_RUNNING_ENTRY = re.compile(r"^\t(?P<name>\S+) \([^)]*\)", re.M)
# a goroutine frame of a test function: `example.com/pkg.TestWait(0xc0…)` then `\t/path/x_test.go:46 +0xf`
_TEST_FRAME = re.compile(r"^(?:[\w./-]+\.)(?P<name>Test\w*)\([^)\n]*\)\n\t(?P<file>\S+_test\.go):(?P<line>\d+)", re.M)


_FRAME = re.compile(r"^(?P<func>\S+)\([^\n]*\)\n\t(?P<path>\S+\.go):(?P<line>\d+)", re.M)
_GO_ROOT = re.compile(r"/usr/(?:local/)?lib/go|/usr/local/go/|/go/src/(?:runtime|testing|sync|time)/|^_testmain\.go")


# a test's own panic (not go test's -timeout alarm): `panic: runtime error: index out of range [1] with length 1
# [recovered]`, then the goroutine's frames innermost first
_PANIC = re.compile(r"^panic: (?!test timed out after )(?P<said>.+?)(?: \[recovered\])?$", re.M)


@dataclass(frozen=True)
class Panic:
    said: str  # the panic's own message, as go printed it
    test: tuple[str, int] | None  # the innermost frame in a test file (`x_test.go`): the test's line that called in
    site: tuple[str, str, int] | None  # (func, file, line): the innermost frame outside Go's own packages, when it is
    # not the test's frame (the code under test, where the panic was raised)

    def message(self) -> str:
        """`panic: …` with the raise site named as such (`raised in h.Expand (homedir.go, line 67)`) when it is not the
        test's: written as no frame is (the frames in the output, whole paths, place it for the hints)."""
        inside = f"\nraised in {self.site[0]} ({self.site[1]}, line {self.site[2]})" if self.site else ""
        return f"panic: {self.said}{inside}"


def go_panic(text: str) -> Panic | None:
    """The first panic in `text` (a test's output after its `--- FAIL` line) with its frames, else None."""
    match = _PANIC.search(text)
    if match is None:
        return None
    frames = [(m["func"], m["path"], int(m["line"])) for m in _FRAME.finditer(text, match.end())]
    test = next(((path, line) for _, path, line in frames if path.endswith("_test.go")), None)
    own = next((f for f in frames if not _GO_ROOT.search(f[1])), None)
    site = None if own is None or (own[1], own[2]) == test else (own[0].rsplit("/", 1)[-1], own[1].rsplit("/", 1)[-1], own[2])
    return Panic(match["said"], test, site)


@dataclass(frozen=True)
class Timeout:
    after: str  # as go printed it: `3s`, `10m0s`
    tests: list[str]  # the tests it stopped, when named (`running tests:` or the running ones)
    frames: dict[str, tuple[str, int]]  # test function → its file and line in the goroutine dump
    innermost: dict[str, tuple[str, str, int]]  # test function → (func, file, line) its goroutine was in


def go_timeout(text: str) -> Timeout | None:
    match = _TIMED_OUT.search(text)
    if match is None:
        return None
    listed = _RUNNING_LIST.search(text, match.end())
    tests = [m["name"] for m in _RUNNING_ENTRY.finditer(listed["list"])] if listed else []
    frames = {m["name"]: (m["file"], int(m["line"])) for block in _goroutines(text[match.end() :])
              if not _PAUSED.match(block) for m in _TEST_FRAME.finditer(block)}  # fmt: skip
    return Timeout(after=match["after"], tests=tests, frames=frames, innermost=_innermost(text[match.end() :]))


# a parallel test's goroutine parked in `t.Parallel()`: paused, its body not started, so not what the alarm stopped
_PAUSED = re.compile(r"^[^\n]*\n(?:\s*\n)*testing\.\(\*T\)\.Parallel\(")


def _goroutines(dump: str) -> list[str]:
    """The dump's goroutine blocks, each from its `goroutine N [state]:` line."""
    return re.split(r"\n\s*\n(?=goroutine )", dump)


def _innermost(dump: str) -> dict[str, tuple[str, str, int]]:
    """For each test function's goroutine, its innermost frame outside Go's own packages."""
    found: dict[str, tuple[str, str, int]] = {}
    for block in re.split(r"\n\s*\ngoroutine ", dump):
        frames = [(m["func"], m["path"], int(m["line"])) for m in _FRAME.finditer(block)]
        tests = [f for f in frames if f[1].endswith("_test.go") and re.search(r"\.Test\w*$", f[0])]
        own = [f for f in frames if not _GO_ROOT.search(f[1])]
        if tests and own:
            name = tests[0][0].rsplit(".", 1)[-1]
            func, path, line = own[0]
            found.setdefault(name, (func.rsplit("/", 1)[-1], path.rsplit("/", 1)[-1], line))
    return found


# the test binary's own last line, printed by go's testing when it ran to its end (`PASS`, or `FAIL` after a failing
# test); a test's log lines are indented, so a bare one is the binary's
_BINARY_END = re.compile(r"^(?:PASS|FAIL)$", re.M)


def binary_stop(package: str, text: str) -> str:
    """What `ParsedRun.stopped` says of a package whose tests ran and whose binary failed without its own end line (a
    panic that killed it, a signal, os.Exit in a test): the tests after the one it stopped in never ran, and the output
    does not say whether there were any. "" when the binary ended by itself (or a -timeout panic, `timeout_stop`)."""
    if _BINARY_END.search(text) or _TIMED_OUT.search(text):
        return ""
    panic = _PANIC.search(text)
    if panic:
        return f"a panic (`panic: {clip(panic['said'], 120)}`) stopped the test binary of {package}"
    return f"something stopped the test binary of {package} (no `PASS`/`FAIL` line of its own: a signal, os.Exit)"


def timeout_stop(timeout: Timeout) -> str:
    """What `ParsedRun.stopped` says of a `-timeout` panic."""
    return f"go test's -timeout ({timeout.after}) stopped the test binary"


def timeout_message(timeout: Timeout, test: str) -> str:
    where = timeout.innermost.get(test.split("/")[0])
    inside = f", in {where[0]} at {where[1]}:{where[2]}" if where else ""
    return (f"panic: test timed out after {timeout.after}: {test} was still running{inside} "
            "(go test's -timeout stopped the whole test binary)")  # fmt: skip
