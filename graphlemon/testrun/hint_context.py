"""What a hint rule sees: the failure, its text, the project root, and where the error was raised."""

from __future__ import annotations

import re
from pathlib import Path

from .models import TestFailure

_DEPENDENCY_PATH = re.compile(
    r"node_modules|site-packages|dist-packages|/lib/python\d|^node:|^internal/|<frozen|/rustc/|/usr/lib/go|/usr/local/go|/\.cargo/registry|/\.venv/|/_pytest/|/pluggy/"
)
_PY_FRAME = re.compile(r'^(?:\s*File "(?P<p1>[^"]+)", line (?P<l1>\d+)|(?P<p2>[^\s:"]+\.py):(?P<l2>\d+): )', re.M)
_OTHER_FRAME = re.compile(r"(?P<p>(?:/|\.{1,2}/|\b[\w.-]+/)?[\w./@+-]+\.(?:[cm]?[jt]sx?|go|rs)):(?P<l>\d+)(?::\d+)?")


class HintContext:
    def __init__(self, failure: TestFailure, root: Path | None) -> None:
        self.failure = failure
        self.text = f"{failure.message}\n{failure.detail}"
        self.root = root

    @property
    def where(self) -> str:
        """` (raised at src/x.py:12)` for the innermost frame outside the test file and dependencies."""
        frame = source_frame(self.text, self.failure.file, self.root)
        return f" (at {frame})" if frame else ""


def error_type(ctx: HintContext) -> str | None:
    """The exception class named in the message (else the detail), AssertionError aside."""
    for text in (ctx.failure.message, ctx.failure.detail):
        for error in re.findall(r"\b([A-Z]\w*(?:Error|Exception))\b", text):
            if error != "AssertionError":
                return error
    return None


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
