"""Where a Rust panic happened: in test code (a failed assertion of a test or its helper) or in the code under test;
and which operand of an `assert_eq!` the test's own source writes as a literal.

libtest reports `panicked at FILE:LINE`. That place is test code when the file is an integration
test (`tests/`, `benches/`, `examples/`), a `tests.rs` / `*_test(s).rs` module file, or the line
lies inside a `#[cfg(test)]` module or a `#[test]` function of a source file. The enclosing
`fn` is named so the hint can say "in test helper `assert_caret`". A doc test
(`src/lib.rs - hamming (line 52)`) is test code too: rustdoc reports a panic of the example's own
statements at a line of the test it generated (the example's lines after the few it adds), under the
doc test's file name, so the failure points at the example's own line. A panic reported at another
file, or at a line of the doc test's file beyond the generated test's length (`example_size` +
`DOCTEST_WRAPPER`), is the code the example called, at its own place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import beneath
from ..errors import GraphLemonError

_TEST_DIRS = {"tests", "benches", "examples"}
_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+)*fn\s+(?P<name>\w+)")
_CFG_TEST = re.compile(r"^\s*#\[cfg\((?:all\()?test\b")
_TEST_ATTR = re.compile(r"^\s*#\[(?:\w+::)?test\b")
_MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class RustPlace:
    in_test_code: bool
    function: str | None  # the enclosing `fn`, when the source could be read
    doc_item: str | None = None  # a doc test's documented item (`hamming`, `Foo::bar`)
    at: str | None = None  # the panic's own `FILE:LINE` when it is not the failure's (a doc test's example called it)


@dataclass(frozen=True)
class DocTest:
    """A doc test as libtest names it: `src/lib.rs - hamming (line 52)` (its example starts at that line)."""

    file: str
    item: str
    line: int


_DOC_TEST = re.compile(r"^(?P<file>\S+\.rs) - (?P<item>.+?) \(line (?P<line>\d+)\)$")
# a crate's or module's own doc test (`//!`), named for no item: `src/lib.rs - (line 37)`
OWN_DOC_TEST = re.compile(r"^(?P<file>\S+\.rs) - \(line (?P<line>\d+)\)$")


def doc_test(name: str) -> DocTest | None:
    match = _DOC_TEST.match(name.strip())
    return DocTest(match["file"], match["item"], int(match["line"])) if match else None


_FENCE = re.compile(r"^\s*(?://[/!]|\*)?\s*(?:```|~~~)")
# the lines rustdoc puts before an example's code in the test it generates (`#![allow(unused)]`, crate attributes,
# `extern crate`, `fn main() {`): 4 with rustc 1.95; a bound, so a line past it is not the generated test's
DOCTEST_WRAPPER = 10


def example_size(root: Path | None, doc: DocTest) -> int | None:
    """How many lines a doc test's example has between its opening fence (the line libtest names) and its closing
    fence; None when the source does not show them."""
    lines = _read(root, doc.file)
    if lines is None or not 0 < doc.line <= len(lines) or not _FENCE.match(lines[doc.line - 1]):
        return None
    end = next((i for i in range(doc.line, len(lines)) if _FENCE.match(lines[i])), None)
    return end - doc.line if end is not None else None


def rust_place(root: Path | None, file: str | None, line: int | None) -> RustPlace | None:
    """Classify a panic location; None when it is not a Rust file of the project."""
    if not file or not file.endswith(".rs") or file.startswith(("/", "library/")) or "/rustc/" in file:
        return None
    path = PurePosixPath(file)
    by_path = bool(_TEST_DIRS & set(path.parts[:-1])) or re.fullmatch(r"tests?|\w+_tests?", path.stem) is not None
    lines = _read(root, file)
    if lines is None or not line or line > len(lines):
        return RustPlace(in_test_code=by_path, function=None)
    before = lines[:line]
    function = _enclosing_fn(before)
    return RustPlace(in_test_code=by_path or _in_cfg_test(before) or _in_test_fn(before), function=function)


def _read(root: Path | None, file: str) -> list[str] | None:
    if root is None:
        return None
    try:  # through the safe reader: a link or a FIFO in the work tree is never followed
        return beneath.read_text(root, file, errors="replace", max_bytes=_MAX_BYTES).splitlines()
    except (OSError, GraphLemonError):
        return None


def _enclosing_fn(before: list[str]) -> str | None:
    for text in reversed(before):
        match = _FN.match(text)
        if match:
            return match["name"]
    return None


def _in_cfg_test(before: list[str]) -> bool:
    """The last `#[cfg(test)]` above opens a block that is still open at the panic line."""
    start = next((i for i in range(len(before) - 1, -1, -1) if _CFG_TEST.match(before[i])), None)
    if start is None:
        return False
    return _open_from(before[start + 1 :])


def _in_test_fn(before: list[str]) -> bool:
    """The nearest `fn` above carries `#[test]` (a test outside any cfg(test) module)."""
    for i in range(len(before) - 1, -1, -1):
        if _FN.match(before[i]):
            attrs = [t for t in before[max(0, i - 4) : i] if t.strip().startswith("#[")]
            return any(_TEST_ATTR.match(t) for t in attrs)
    return False


def _open_from(lines: list[str]) -> bool:
    """Whether the first block opened in `lines` is still open at their end (braces in strings/comments aside)."""
    depth, opened = 0, False
    for text in lines:
        code = re.sub(r'//.*$|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'', "", text)
        for char in code:
            if char == "{":
                depth, opened = depth + 1, True
            elif char == "}":
                depth -= 1
                if opened and depth == 0:
                    return False
        if not opened and code.strip().endswith(";"):
            return False  # `#[cfg(test)] mod tests;` or a single item: no block
    return opened and depth > 0


def source_lines(root: Path, file: str) -> list[str] | None:
    """The lines of a project file (a hint's evidence: the statement at a failure's own place), if readable."""
    return _read(root, file)


# --- which operand of assert_eq! is a literal -------------------------------------------------------------

_ASSERT_EQ = re.compile(r"\b(?:debug_)?assert_(?:eq|ne)!\s*\(")
_RUST_NUMBER = re.compile(
    r"-?(?:0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)(?:[iu](?:8|16|32|64|128|size)|f32|f64)?"
)
_RUST_STRING = re.compile(r'b?r(?P<h>#*)".*?"(?P=h)|b?"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\'\\])+\'', re.S)
_CONSTRUCTOR = re.compile(r"^(?:Ok|Err|Some|vec!|&|&mut )\s*")


def literal_operand(root: Path | None, file: str | None, line: int | None) -> int | None:
    """Which operand (0, 1) of the `assert_eq!` at `file:line` the test's source writes as a literal (a number,
    string, char or bool, or one wrapped in Ok/Err/Some/&/a list or tuple of literals) while the other is not;
    None when neither or both are, or the source cannot be read."""
    if root is None or not file or not line or not file.endswith(".rs"):
        return None
    lines = _read(root, file)
    if lines is None or not 0 < line <= len(lines):
        return None
    text = "\n".join(lines[line - 1 : line + 30])
    start = _ASSERT_EQ.search(lines[line - 1])
    if start is None:
        return None
    args = split_arguments(text, start.end())
    if args is None or len(args) < 2:
        return None
    literal = [is_rust_literal(a) for a in args[:2]]
    return (0 if literal[0] else 1) if literal[0] != literal[1] else None


def split_arguments(text: str, at: int) -> list[str] | None:
    """The comma-separated arguments from `at` (just after an opening parenthesis) to its closing one, split at
    the top level only (brackets, strings and chars kept whole); None when it does not close."""
    args: list[str] = []
    depth, start, i = 0, at, at
    while i < len(text):
        ch = text[i]
        string = _RUST_STRING.match(text, i) if ch in "\"'br" else None
        if string and (ch != "'" or string.end() - i <= 12):  # a char literal, not a lifetime
            i = string.end()
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                args.append(text[start:i].strip())
                return [a for a in args if a]
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return None


def is_rust_literal(expr: str) -> bool:
    """A literal value: `3`, `1_100_000u64`, `-2.5`, `"a"`, `'c'`, `true`, `None`, `Ok(3)`, `&[1, 2]`, `(1, "a")`."""
    expr = expr.strip()
    if not expr:
        return False
    if expr in ("true", "false", "None") or _RUST_NUMBER.fullmatch(expr) or _RUST_STRING.fullmatch(expr):
        return True
    wrapped = _CONSTRUCTOR.match(expr)
    if wrapped and wrapped.end() < len(expr):
        return is_rust_literal(expr[wrapped.end() :])
    if expr[0] in "([" and expr[-1] in ")]":
        inner = split_arguments(expr, 1)
        return inner is not None and all(is_rust_literal(a) for a in inner)
    return False
