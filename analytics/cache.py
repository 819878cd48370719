"""A Parquet cache of the loaded ledger tables, so a report does not re-parse every ndjson line.

`<state_dir>/cache/analytics/<view>.parquet` holds the validated table loaded from one ledger
file; its Parquet key-value metadata says which bytes of that file it covers: the file's inode,
the covered length and the crc32 of those bytes, plus the cache format and a hash of the view's
columns. One file, replaced atomically by its writer and read through a private hard link, so a
reader never pairs a table with another version's description (readers and the DevLoop's
appends race freely; tests/analytics/test_analytics_cache.py races them). The ledger is
append-only, so on the next load:

* the file is unchanged (same inode and length, and either the same status-change time or the
  same crc32): the table is read from Parquet;
* the file grew and the covered bytes are unchanged: the table is read from Parquet and only
  the new whole lines are parsed and checked;
* anything else (a rewritten, shrunk or edited file, a new cache format, a changed schema, an
  unreadable cache): the file is loaded from scratch, exactly as without a cache.

Checking the covered bytes of a file written since reads them once (crc32 runs at about 2.5 GB/s), far cheaper than
parsing JSON; it guards against accidental change, not an adversary (whoever can edit the
ledger can edit the cache). A cache that cannot be written (a read-only project) is skipped:
it is never needed for a correct answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import secrets
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import duckdb

from .schema import VIEW_NAMES, sql_string, view_select_sql

CACHE_FORMAT = "1"
_CHUNK = 1 << 22
_RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class Coverage:
    """Which bytes of a ledger file a table holds: the whole lines in `[0, size)`."""

    inode: int
    size: int
    crc: int
    ctime_ns: int  # the file's status-change time when `size` was read: equal now means untouched since


def copy_range(path: Path, start: int, end: int, out: BinaryIO | None = None, crc: int = 0) -> int:
    """crc32 of `path[start:end]` continuing from `crc` (the crc32 of `path[:start]`); copies the bytes to `out`."""
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            chunk = fh.read(min(_CHUNK, left))
            if not chunk:
                raise OSError(f"{path} is shorter than {end} bytes")
            crc = zlib.crc32(chunk, crc)
            if out is not None:
                out.write(chunk)
            left -= len(chunk)
    return crc


def crc_of(path: Path, size: int) -> int:
    """crc32 of the first `size` bytes of `path`."""
    return copy_range(path, 0, size)


def whole_lines_end(path: Path, start: int, size: int) -> int:
    """The end of the last complete line in `path[start:size]` (`start` when there is none)."""
    with open(path, "rb") as fh:
        pos = size
        while pos > start:
            step = min(65536, pos - start)
            fh.seek(pos - step)
            chunk = fh.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                return pos - step + cut + 1
            pos -= step
    return start


def _still_covers(ledger_file: Path, cov: Coverage) -> bool:
    """The ledger file still starts with exactly the bytes the cache was made from."""
    try:
        st = ledger_file.stat()
        if st.st_ino != cov.inode or st.st_size < cov.size:
            return False
        if st.st_size == cov.size and st.st_ctime_ns == cov.ctime_ns:
            return True  # not written since (a write always moves ctime), as git trusts its index
        return crc_of(ledger_file, cov.size) == cov.crc
    except OSError:
        return False


class TableCache:
    """The cached table of one ledger kind."""

    def __init__(self, state_dir: Path, kind: str) -> None:
        self.kind = kind
        self.path = state_dir / "cache" / "analytics" / f"{VIEW_NAMES[kind]}.parquet"
        self.schema = hashlib.sha256(view_select_sql(kind, "src").encode()).hexdigest()[:16]

    def load_into(self, con: duckdb.DuckDBPyConnection, table: str, ledger_file: Path) -> Coverage | None:
        """Fill `table` (created empty with the view's types) from the cache if the cache still describes the
        start of `ledger_file`; returns what it covers, or None (and `table` left empty) when it cannot be used."""
        with self._pinned() as cached:
            cov = self.coverage(con, cached) if cached is not None else None
            if cov is None or not _still_covers(ledger_file, cov):
                return None
            try:
                con.execute(f"INSERT INTO {table} SELECT * FROM read_parquet({sql_string(str(cached))})")
            except duckdb.Error:
                con.execute(f"DELETE FROM {table}")
                return None
            return cov

    def coverage(self, con: duckdb.DuckDBPyConnection, cached: Path | None = None) -> Coverage | None:
        """What the cache file (default: the current one) covers, or None when it is missing or unusable."""
        cached = cached or self.path
        try:
            rows = con.execute(
                f"SELECT key::VARCHAR, value::VARCHAR FROM parquet_kv_metadata({sql_string(str(cached))})"
            ).fetchall()
        except duckdb.Error:
            return None
        meta = dict(rows)
        if meta.get("format") != CACHE_FORMAT or meta.get("schema") != self.schema:
            return None
        try:
            return Coverage(*(int(meta[field]) for field in ("inode", "size", "crc", "ctime_ns")))
        except (KeyError, ValueError):
            return None

    @contextlib.contextmanager
    def _pinned(self) -> Iterator[Path | None]:
        """A private hard link to the current cache file: its description and its rows are then read from one
        version, even if another process replaces the cache in between."""
        link = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.read")
        try:
            os.link(self.path, link)
        except OSError:  # no cache yet, or a file system without hard links
            yield None
            return
        try:
            yield link
        finally:
            with contextlib.suppress(OSError):
                link.unlink()

    def _sweep(self) -> None:
        """Remove what killed readers and writers left behind (linked or written over an hour ago)."""
        cutoff = time.time() - 3600
        for leftover in self.path.parent.glob(f".{self.path.name}.*"):
            with contextlib.suppress(OSError):
                if leftover.stat().st_ctime < cutoff:
                    leftover.unlink()

    def store(self, con: duckdb.DuckDBPyConnection, table: str, cov: Coverage) -> None:
        """Write `table` as the cache for `cov`; best effort (a read-only project keeps no cache)."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")  # one per writer
        if time.time_ns() - cov.ctime_ns < _RACY_NS:  # a write in the same clock tick would not move ctime
            cov = dataclasses.replace(cov, ctime_ns=-1)  # so check the bytes next time ("racy git")
        meta = {"format": CACHE_FORMAT, "schema": self.schema, **dataclasses.asdict(cov)}
        kv = ", ".join(f"{k}: {sql_string(str(v))}" for k, v in meta.items())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con.execute(
                f"COPY {table} TO {sql_string(str(tmp))} (FORMAT parquet, COMPRESSION zstd, KV_METADATA {{{kv}}})"
            )
            os.replace(tmp, self.path)
            self._sweep()
        except (OSError, duckdb.Error):
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
