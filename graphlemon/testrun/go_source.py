"""Where a Go test failed: the first of its messages that reports the failure, not a log line.

`go test` prints a t.Log line and a t.Error line alike (`    file_test.go:12: message`), so its output does not
tell them apart, and the parsers take the test's first message for its place. When the source line of that first
message (read from the project) calls t.Log/t.Logf, it is a log line: the place is the first message whose line
calls a reporting method (Error, Errorf, Fatal, Fatalf, Fail, FailNow), else the first whose line calls no Log
method. The file is the failure's folder's, else the one file of that name in the project (plain `go test ./...` prints
the file name only). When the first line is not a log call, the first message stays the place; when its source
cannot be read, it stays too, and the facts call it the test's first message, not a check.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from .hint_context import statement_at
from .result_models import TestFailure

# a message's first line as go prints it (`    file_test.go:12: text`; the failure's detail may have lost the
# indent of its first line)
_PLACE = re.compile(r"^\s*(?P<file>[\w./-]+\.go):(?P<line>\d+): ", re.M)
_REPORTS = re.compile(r"\.(?:Errorf?|Fatalf?|Fail|FailNow)\s*\(")
_LOGS = re.compile(r"\.Logf?\s*\(")


def settle_go_location(failure: TestFailure, root: Path) -> None:
    """Move a Go failure's file and line from a log line to the first message that reports the failure."""
    places = _first_of_several(failure)
    if places is None:
        return
    folder = PurePosixPath(failure.file or "").parent
    package = _package_folder(root, folder, places[0][0])
    if package is None:
        return
    sources = [(str(folder / file), line, statement_at(root, str(package / file), line)) for file, line in places]
    if not _LOGS.search(sources[0][2] or ""):
        return  # not known to be a log line: the first message stays the place
    later = sources[1:]
    chosen = next((s for s in later if s[2] and _REPORTS.search(s[2])), None) or next(
        (s for s in later if s[2] and not _LOGS.search(s[2])), None
    )
    if chosen is not None:
        failure.file, failure.line = chosen[0], chosen[1]


def unread_first_message(failure: TestFailure, root: Path | None) -> bool:
    """The failure's place is the first of several Go messages and its source line could not be read: it may be a
    t.Log line (go prints log and error lines alike), so it is no proven check."""
    places = _first_of_several(failure)
    if places is None:
        return False
    package = _package_folder(root, PurePosixPath(failure.file or "").parent, places[0][0]) if root else None
    return package is None or statement_at(root, str(package / places[0][0]), places[0][1]) is None


def _first_of_several(failure: TestFailure) -> list[tuple[str, int]] | None:
    """The `file.go:N:` places of a Go failure's messages, when there are several and the failure's place is the first."""
    if not failure.file or not failure.file.endswith(".go") or failure.line is None:
        return None
    places = [(m["file"], int(m["line"])) for m in _PLACE.finditer(failure.detail or "")]
    first = str(PurePosixPath(failure.file).parent / places[0][0]) if places else None
    return places if len(places) >= 2 and first == failure.file and places[0][1] == failure.line else None


_SKIPPED = {"vendor", "node_modules", "testdata"}


def _package_folder(root: Path, folder: PurePosixPath, name: str) -> PurePosixPath | None:
    """The project folder holding the test file go named: the failure's own folder, else (`go test ./...` as text
    prints the file name only) the one folder of the project with a file of that name; None when not exactly one."""
    if (root / folder / name).is_file():
        return folder
    found: list[PurePosixPath] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED]
        if name in files:
            found.append(PurePosixPath(Path(current).relative_to(root).as_posix()))
            if len(found) > 1:
                return None
    return found[0] if found else None
