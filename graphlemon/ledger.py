"""The append-only ndjson ledger under `<repo>/.graphlemon/`.

Rules (the README's "The ledger"; old ledgers: docs/ledger.md):

* one JSON object per line, each a validated `models.Record`; the record's `kind`
  picks the file (`models.LEDGER_FILES`);
* appends are whole lines written under an exclusive `flock` on the file, then
  flushed and fsynced, so concurrent processes never interleave;
* the bytes after the last newline are a *torn tail* left by a writer that died
  mid-append: the next writer or reader (holding the lock) repairs it by
  truncation (or completes it if it is a whole valid record missing only its
  newline) and reports it;
* every line is redacted on its way out (`graphlemon.redact`: environment secrets, key shapes);
* any other line that does not parse is `LEDGER_CORRUPT` naming file and line,
  never skipped; nothing is rewritten.

Reads are incremental: a `Ledger` remembers how far it has parsed each file and
only parses appended bytes on the next read.
"""

from __future__ import annotations

import fcntl
import gc
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from .errors import ErrorCode, GraphLemonError, permission_denied, write_failed
from .models import LEDGER_FILES, RECORD_ADAPTER, RECORD_TYPES, SCHEMA_VERSION, Record
from .redact import DEFAULT as DEFAULT_REDACTOR

log = logging.getLogger("graphlemon.ledger")

R = TypeVar("R", bound=Record)

_FILE_MODELS = {name: RECORD_TYPES[kind] for kind, name in LEDGER_FILES.items()}

# Numbered schema migrations: (kind, from_version) -> function(raw dict) -> raw dict of from_version + 1.
MIGRATIONS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}


@dataclass(frozen=True)
class Repair:
    file: str
    dropped_bytes: int
    action: str  # "truncated" | "completed"

    def __str__(self) -> str:
        if self.action == "completed":
            return f"ledger: {self.file}: final line had no newline; completed it"
        return (
            f"ledger: {self.file}: dropped a torn final line ({self.dropped_bytes} bytes) left by an interrupted write"
        )


@dataclass
class _FileState:
    inode: int = -1
    offset: int = 0
    lines: int = 0
    records: list[Record] = field(default_factory=list)


def encode(record: Record) -> bytes:
    """One ledger line, secrets masked: every record goes through here, whatever wrote it (test output included)."""
    return DEFAULT_REDACTOR.text(record.model_dump_json(exclude_none=True)).encode() + b"\n"


def decode_line(raw: bytes, file: Path, lineno: int) -> Record:
    """Validate one ledger line; LEDGER_CORRUPT (file, line) if it is not a valid record."""
    model = _FILE_MODELS.get(file.name)
    if model is not None:  # fast path: the file fixes the model, and the model's Literal fixes the kind
        try:
            record = model.model_validate_json(raw)
            if record.schema_version == SCHEMA_VERSION:
                return record
        except ValidationError:
            pass
    try:
        record = RECORD_ADAPTER.validate_json(raw)
    except ValidationError as exc:
        record = _migrate_or_raise(raw, file, lineno, exc)
    if record.schema_version != SCHEMA_VERSION:
        record = _migrate_or_raise(raw, file, lineno, None)
    if LEDGER_FILES.get(record.kind) != file.name:
        raise _corrupt(file, lineno, f"a '{record.kind}' record does not belong in {file.name}")
    return record


def _migrate_or_raise(raw: bytes, file: Path, lineno: int, exc: ValidationError | None) -> Record:
    try:
        data = json.loads(raw)
    except UnicodeDecodeError as err:
        raise _corrupt(file, lineno, f"not UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})") from None
    except ValueError as err:
        raise _corrupt(file, lineno, f"not JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise _corrupt(file, lineno, "not a JSON object")
    version = data.get("schema_version", SCHEMA_VERSION)
    kind = data.get("kind")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise _corrupt(file, lineno, f"schema_version {version!r} is newer than this graphlemon ({SCHEMA_VERSION})")
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get((str(kind), version))
        if step is None:
            raise _corrupt(file, lineno, f"no migration for kind {kind!r} from schema_version {version}")
        data = step(data)
        version += 1
        data["schema_version"] = version
    try:
        return RECORD_ADAPTER.validate_python(data)
    except ValidationError as err:
        first = (exc or err).errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise _corrupt(file, lineno, f"invalid record: {where}: {first.get('msg')}") from None


def _corrupt(file: Path, lineno: int, why: str) -> GraphLemonError:
    return GraphLemonError(ErrorCode.LEDGER_CORRUPT, f"{file}:{lineno}: {why}", file=str(file), line=lineno)


class LockedFile:
    """An open ledger file held under an exclusive lock (see `Ledger.transaction`)."""

    def __init__(self, ledger: Ledger, kind: str, fd: int) -> None:
        self.ledger, self.kind, self.fd = ledger, kind, fd
        self.pending: list[Record] = []

    def records(self) -> list[Record]:
        return self.ledger._refresh(self.kind, locked=True)

    def append(self, record: Record) -> None:
        self.ledger._check_kind(record, self.kind)
        self.pending.append(record)


class Ledger:
    """Append-only ndjson files in one `.graphlemon/` state directory."""

    def __init__(self, state_dir: Path | str) -> None:
        self.state_dir = Path(state_dir)
        self.repairs: list[Repair] = []
        self._state: dict[str, _FileState] = {}
        # threads of one process share a Ledger (parallel units): parsing and advancing a file's offset is
        # one step. Never held while waiting for a file lock (a transaction's thread may need it to read).
        self._mutex = threading.Lock()
        # called with each record this instance wrote, once it is on disk (a live view, e.g. run logs)
        self.on_append: list[Callable[[Record], None]] = []

    # -- paths -----------------------------------------------------------------------------
    def path(self, kind: str) -> Path:
        try:
            return self.state_dir / LEDGER_FILES[kind]
        except KeyError:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"unknown ledger record kind {kind!r}") from None

    # -- writing ---------------------------------------------------------------------------
    def append(self, *records: Record) -> None:
        """Append records (any kinds) as whole lines: one locked write + fsync per file."""
        by_kind: dict[str, list[Record]] = {}
        for record in records:
            self._check_kind(record, record.kind)
            by_kind.setdefault(record.kind, []).append(record)
        for kind in sorted(by_kind):
            with self._locked(kind) as fd:
                _write_all(fd, b"".join(encode(r) for r in by_kind[kind]), self.path(kind))
        self._appended(records)

    @contextmanager
    def transaction(self, kind: str) -> Iterator[LockedFile]:
        """Hold a file's lock across read-decide-append (e.g. bug de-duplication)."""
        with self._locked(kind) as fd:
            handle = LockedFile(self, kind, fd)
            yield handle
            if handle.pending:
                _write_all(fd, b"".join(encode(r) for r in handle.pending), self.path(kind))
        self._appended(handle.pending)

    def _appended(self, records) -> None:
        for watcher in list(self.on_append):
            for record in records:
                watcher(record)

    def append_unique(self, record: Record, key: Callable[[Record], object]) -> bool:
        """Append unless a record of the same kind with the same `key` exists (idempotent re-runs). -> appended?"""
        with self.transaction(record.kind) as tx:
            wanted = key(record)
            if any(key(r) == wanted for r in tx.records()):
                return False
            tx.append(record)
            return True

    # -- reading ---------------------------------------------------------------------------
    def read(self, kind: str) -> list[Record]:
        """All valid records of one kind, oldest first (incremental, validated)."""
        return self._refresh(kind, locked=False)

    def read_as(self, kind: str, model: type[R]) -> list[R]:
        return [r for r in self.read(kind) if isinstance(r, model)]

    # -- internals -------------------------------------------------------------------------
    def _check_kind(self, record: Record, kind: str) -> None:
        if not isinstance(record, RECORD_TYPES.get(record.kind, ())) or record.kind != kind:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"not a {kind!r} ledger record: {type(record).__name__}")
        # validate on write: a model built with model_construct or mutated must still be valid
        RECORD_ADAPTER.validate_python(record.model_dump())

    @contextmanager
    def _locked(self, kind: str) -> Iterator[int]:
        path = self.path(kind)
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except PermissionError as exc:
            raise permission_denied(exc.filename or path, "write", "the ledger is append-only and needs it") from None
        except OSError as exc:  # a read-only file or folder, a full disk: the path and the reason, not a traceback
            raise write_failed(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                self._repair_tail(fd, path)
            except OSError as exc:
                raise write_failed(path, exc) from None
            yield fd
            try:
                os.fsync(fd)
            except OSError as exc:
                raise write_failed(path, exc) from None
        finally:
            os.close(fd)  # closing releases the lock

    def _repair_tail(self, fd: int, path: Path) -> None:
        """Under the lock: bytes after the last newline are a torn write from a dead writer."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        start = _last_newline_end(fd, size)
        tail = os.pread(fd, size - start, start)
        try:
            decode_line(tail, path, -1)
        except GraphLemonError:
            os.ftruncate(fd, start)
            repair = Repair(str(path), size - start, "truncated")
        else:
            _write_all(fd, b"\n", path)
            repair = Repair(str(path), 0, "completed")
        os.fsync(fd)
        self.repairs.append(repair)
        log.warning("%s", repair)

    def _refresh(self, kind: str, *, locked: bool) -> list[Record]:
        """The file's records (a copy), parsing only the bytes appended since the last call."""
        with self._mutex:
            records = self._parse_new(kind, partial_ok=locked)
        if records is not None:
            return records
        with self._locked(kind):  # a partial last line: wait for its live writer, or repair a dead one's tail
            pass
        return self._refresh(kind, locked=True)

    def _parse_new(self, kind: str, *, partial_ok: bool) -> list[Record] | None:
        """Under the mutex. None when the file ends mid-line and that is not `partial_ok` (the caller has waited
        on the file lock, so a partial line now belongs to a live writer: only whole lines are taken)."""
        path = self.path(kind)
        state = self._state.setdefault(kind, _FileState())
        try:
            st = path.stat()
        except FileNotFoundError:
            self._state[kind] = _FileState()
            return []
        if st.st_ino != state.inode or st.st_size < state.offset:
            state = self._state[kind] = _FileState(inode=st.st_ino)
        if st.st_size > state.offset:
            with open(path, "rb") as fh:
                fh.seek(state.offset)
                chunk = fh.read(st.st_size - state.offset)
            if not chunk.endswith(b"\n") and not partial_ok:
                return None
            cut, lines, parsed = chunk.rfind(b"\n") + 1, state.lines, []
            with _gc_paused():  # parsing many records at once: generational GC passes would triple the time
                for raw in chunk[:cut].split(b"\n")[:-1]:
                    lines += 1
                    if raw.strip():
                        parsed.append(decode_line(raw, path, lines))
            state.records += parsed  # all or nothing: a corrupt line leaves the state where it was
            state.lines, state.offset = lines, state.offset + cut
        return list(state.records)


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _last_newline_end(fd: int, size: int) -> int:
    pos, block = size, 65536
    while pos > 0:
        start = max(0, pos - block)
        buf = os.pread(fd, pos - start, start)
        idx = buf.rfind(b"\n")
        if idx >= 0:
            return start + idx + 1
        pos = start
    return 0


def _write_all(fd: int, data: bytes, path: Path) -> None:
    """Write whole lines under the lock; a failed write (ENOSPC, EFBIG, EIO) takes back what it wrote, so the
    file keeps only whole records, and is LEDGER_WRITE_FAILED naming the file."""
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # the next access repairs the torn tail
        raise write_failed(path, exc) from None
