"""What a unit loop run elsewhere brings back, and how the one writer of the ledger takes it in (docs/scale.md).

A unit loop on a worker that shares no filesystem with the devloop works on a scratch copy of the task's state
folder (`pack_state` / `unpack_state`). Before it starts, the worker marks how far every file of that copy goes
(`mark_state`); when it ends, everything written after the mark is its result (`collect`): the ledger lines it
appended, file by file in order, and the other state files it wrote (test logs, agent state). The devloop, the
only writer of the real ledger, appends them (`absorb`): each ledger file in one locked transaction that skips
a record already there, the outcomes file last. So a result taken in twice adds nothing, and a devloop killed
half-way through taking one in completes it on the next try.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..ledger import Ledger, decode_line
from ..models import LEDGER_FILES
from ..project import PROJECT_FILE

LEDGER_NAMES = frozenset(LEDGER_FILES.values())
OUTCOMES = LEDGER_FILES["outcome"]
# never part of a snapshot or a result: the loop's git work trees (code goes through git), the goal-slot and
# run-marker locks of the devloop's own process
LOCAL_ONLY = ("worktrees", "goal-slots", "running")


class StateFile(BaseModel):
    """A state file (not a ledger file) the unit loop wrote, whole."""

    path: str = Field(min_length=1, max_length=1000)
    data: str  # base64


class UnitRecords(BaseModel):
    """Everything a unit loop wrote to its scratch state folder after the mark: ledger lines per file, in the
    order they were appended, and whole state files."""

    lines: dict[str, list[str]] = Field(default_factory=dict)
    files: list[StateFile] = Field(default_factory=list)

    def count(self) -> int:
        return sum(len(v) for v in self.lines.values())


StateMark = dict[str, tuple[int, int]]  # relative path -> (size, mtime_ns)


def _local_only(rel: PurePosixPath) -> bool:
    return bool(rel.parts) and rel.parts[0] in LOCAL_ONLY or rel.name.endswith(".lock")


def _state_files(state_dir: Path):
    for path in sorted(state_dir.rglob("*")):
        rel = PurePosixPath(path.relative_to(state_dir).as_posix())
        if path.is_file() and not path.is_symlink() and not _local_only(rel):
            yield rel, path


def pack_state(state_dir: Path) -> bytes:
    """The task's state folder as a gzipped tar (work trees and the devloop's locks left out)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=3) as tar:
        for rel, path in _state_files(Path(state_dir)):
            tar.add(path, arcname=str(rel), recursive=False)
    return buf.getvalue()


def snapshot_key(node_exec_id: str, data: bytes) -> str:
    """One key per unit loop and content: units dispatched at once never write (nor read) the same object."""
    return f"graphlemon-snapshots/{node_exec_id}-{hashlib.sha256(data).hexdigest()}.tar.gz"


def unpack_state(data: bytes, state_dir: Path) -> None:
    """Unpack a snapshot into an empty scratch state folder: regular files and folders only, every path inside."""
    state_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getmembers()
            if PROJECT_FILE not in {m.name for m in members}:
                raise invalid_param(f"state snapshot holds no {PROJECT_FILE}: it is not a project's state folder")
            for m in members:
                if not (m.isfile() or m.isdir()):
                    raise invalid_param(f"state snapshot: {m.name!r} is not a plain file or folder")
                _inside(state_dir, m.name, "state snapshot")
            tar.extractall(state_dir, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise invalid_param(f"state snapshot is not a readable gzipped tar: {exc}") from None


def mark_state(state_dir: Path) -> StateMark:
    """How far each state file goes now (a ledger file: its size; another file: size and modification time)."""
    marks = {}
    for rel, path in _state_files(Path(state_dir)):
        st = path.stat()
        marks[str(rel)] = (st.st_size, st.st_mtime_ns)
    return marks


def collect(state_dir: Path, mark: StateMark) -> UnitRecords:
    """What was written after `mark`: the whole lines appended to each ledger file, and new or changed files."""
    out = UnitRecords()
    for rel, path in _state_files(Path(state_dir)):
        key = str(rel)
        st = path.stat()
        if mark.get(key) == (st.st_size, st.st_mtime_ns):
            continue
        if key in LEDGER_NAMES:
            with open(path, "rb") as fh:
                fh.seek(mark.get(key, (0, 0))[0])
                chunk = fh.read()
            whole = chunk[: chunk.rfind(b"\n") + 1]
            lines = [raw.decode(errors="surrogateescape") for raw in whole.split(b"\n") if raw.strip()]
            if lines:
                out.lines[key] = lines
        else:
            out.files.append(StateFile(path=key, data=base64.b64encode(path.read_bytes()).decode()))
    return out


def absorb(ledger: Ledger, records: UnitRecords) -> int:
    """Append a unit loop's records to the real ledger, skipping any already there; outcomes last, so an outcome
    in the ledger says all of its unit loop's records are. -> how many records were appended."""
    state_dir = ledger.state_dir
    files, parsed = check(state_dir, records)  # all checked before anything is written
    for target, data in files:
        _write_file(target, data)
    appended = 0
    for name in sorted(parsed, key=lambda n: (n == OUTCOMES, n)):
        kind = parsed[name][0].kind if parsed[name] else None
        if kind is None:
            continue
        with ledger.transaction(kind) as tx:
            seen = {r.model_dump_json() for r in tx.records()}
            for record in parsed[name]:
                text = record.model_dump_json()
                if text not in seen:
                    seen.add(text)
                    tx.append(record)
                    appended += 1
    return appended


def check(state_dir: Path, records: UnitRecords):
    """Every file path and ledger line of a result, checked (INVALID_PARAM, LEDGER_CORRUPT) -> (files, records)."""
    files = [_checked(state_dir, f) for f in records.files]
    return files, {name: _parse(state_dir, name, lines) for name, lines in records.lines.items()}


def _parse(state_dir: Path, name: str, lines: list[str]):
    if name not in LEDGER_NAMES:
        raise invalid_param(f"unit result: {name!r} is not a ledger file")
    return [decode_line(line.encode(errors="surrogateescape"), state_dir / name, i) for i, line in enumerate(lines, 1)]


def _inside(state_dir: Path, rel: str, what: str) -> Path:
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or "\0" in rel:
        raise invalid_param(f"{what}: {rel!r} is not a path inside the state folder")
    return state_dir / pure


def _checked(state_dir: Path, f: StateFile) -> tuple[Path, bytes]:
    """Where a returned state file goes and its bytes; never a ledger file, a work tree or a lock."""
    target = _inside(state_dir, f.path, "unit result")
    if f.path in LEDGER_NAMES or _local_only(PurePosixPath(f.path)):
        raise invalid_param(f"unit result: {f.path!r} is not a state file a unit loop may return")
    try:
        return target, base64.b64decode(f.data, validate=True)
    except binascii.Error:
        raise invalid_param(f"unit result: the content of {f.path!r} is not base64") from None


def _write_file(target: Path, data: bytes) -> None:
    """A returned state file in place (atomically), unless it is there already."""
    if target.is_file() and target.read_bytes() == data:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as exc:
        raise GraphLemonError(ErrorCode.IO_ERROR, f"cannot write {target}: {exc.strerror}", path=str(target)) from None
