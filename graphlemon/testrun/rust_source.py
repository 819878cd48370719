"""Where a Rust panic happened: in test code (a failed assertion of a test or its helper) or in the code under test.

libtest reports `panicked at FILE:LINE`. That place is test code when the file is an integration
test (`tests/`, `benches/`, `examples/`), a `tests.rs` / `*_test(s).rs` module file, or the line
lies inside a `#[cfg(test)]` module or a `#[test]` function of a source file. The enclosing
`fn` is named so the hint can say "in test helper `assert_caret`".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_TEST_DIRS = {"tests", "benches", "examples"}
_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+)*fn\s+(?P<name>\w+)")
_CFG_TEST = re.compile(r"^\s*#\[cfg\((?:all\()?test\b")
_TEST_ATTR = re.compile(r"^\s*#\[(?:\w+::)?test\b")
_MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class RustPlace:
    in_test_code: bool
    function: str | None  # the enclosing `fn`, when the source could be read


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
    try:
        path = (root / file).resolve()
        if not path.is_relative_to(root.resolve()) or path.stat().st_size > _MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
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
