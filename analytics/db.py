"""The ledger in DuckDB: a validated in-memory database, and the same views as DDL for the shell.

`LedgerDB(state_dir)` loads every ledger file once into an in-memory table named
after the file (`runs`, `bugs`, `usage`, ...) through the typed views of
`graphlemon.analytics.schema`, materialises the derived views (`bug_state`, ...) the same
way, then disables file access, so SQL run through it can read the ledger and
nothing else.

Integrity (the ledger's rule: a bad line is LEDGER_CORRUPT naming file and line,
never skipped) without paying for pydantic on the fast path:

1. a file whose last byte is not a newline has a torn tail: it goes through
   `graphlemon.ledger.Ledger.read`, which repairs it under the writers' lock;
2. DuckDB parses each file with explicit types; then one SQL pass counts rows
   that fail the cheap checks (kind, schema_version, required fields,
   vocabularies);
3. if DuckDB cannot parse a file, or a row fails a check, the file is re-read
   through `Ledger.read`, which validates every line: a bad line raises
   LEDGER_CORRUPT with its file and line number; lines of an older
   schema_version are migrated by the ledger's numbered migrations and the
   canonical records are loaded instead.

Loaded tables are cached as Parquet under `.graphlemon/cache/analytics/` (`graphlemon.analytics.cache`):
an unchanged file is read from the cache, an appended one parses only its new lines. Analytics
writes nothing else under `.graphlemon/`, and never the ledger.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from graphlemon.errors import ErrorCode, GraphLemonError, invalid_param
from graphlemon.ledger import Ledger, encode
from graphlemon.models import LEDGER_FILES

from .cache import Coverage, TableCache, copy_range, crc_of, whole_lines_end
from .schema import (
    VIEW_NAMES,
    derived_ddl,
    empty_source_sql,
    q,
    read_json_sql,
    view_select_sql,
    violations_sql,
)

_PARAM = re.compile(r"\$([a-z_]+)")


class LedgerDB:
    """An in-memory DuckDB holding one project's ledger (validated), closed with `close()` or `with`."""

    def __init__(self, state_dir: Path | str, *, cache: bool = True) -> None:
        self.state_dir = Path(state_dir)
        self.use_cache = cache
        self.con = duckdb.connect(":memory:")
        try:
            self.con.execute("SET TimeZone = 'UTC'")
            for kind in LEDGER_FILES:
                self._load(kind)
            for ddl in derived_ddl("TABLE"):  # computed once: several reports read each of them
                self.con.execute(ddl)
            self.con.execute("SET enable_external_access = false")
            self.con.execute("SET lock_configuration = true")
        except BaseException:
            self.con.close()
            raise

    def __enter__(self) -> LedgerDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    # -- querying ----------------------------------------------------------------------------
    def execute(self, sql: str, params: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run trusted SQL (ours) with named `$params`; only the parameters the SQL uses are bound."""
        used = set(_PARAM.findall(sql))
        return self.con.execute(sql, {k: v for k, v in (params or {}).items() if k in used})

    def frame(self, sql: str, params: dict[str, Any] | None = None) -> pd.DataFrame:
        return self.execute(sql, params).df()

    def user_query(self, sql: str) -> pd.DataFrame:
        """Run a user's SQL: a DuckDB error is INVALID_PARAM with DuckDB's message."""
        if not sql.strip():
            raise invalid_param("the SQL query is empty")
        _only_reads(sql)
        try:
            rel = self.con.sql(sql)
            return rel.df() if rel is not None else pd.DataFrame()  # a relation runs when read
        except duckdb.Error as exc:
            raise invalid_param(f"SQL error: {exc}") from None

    # -- loading -----------------------------------------------------------------------------
    def _load(self, kind: str) -> None:
        path = self.state_dir / LEDGER_FILES[kind]
        table = q(VIEW_NAMES[kind])
        self.con.execute(f"CREATE TABLE {table} AS {view_select_sql(kind, empty_source_sql(kind))}")
        if not path.is_file() or path.stat().st_size == 0:
            return
        if not _ends_with_newline(path):
            Ledger(self.state_dir).read(kind)  # repairs a torn tail under the lock, or raises LEDGER_CORRUPT
        cache = TableCache(self.state_dir, kind) if self.use_cache else None
        if cache is not None and self._load_cached(kind, path, table, cache):
            return
        before = path.stat()
        self._load_file(kind, path, table)
        after = path.stat()
        if cache is not None and (after.st_ino, after.st_size) == (before.st_ino, before.st_size):
            if _ends_with_newline(path):  # no writer appended while DuckDB read it: the table is exactly the file
                crc = crc_of(path, before.st_size)
                cache.store(self.con, table, Coverage(before.st_ino, before.st_size, crc, before.st_ctime_ns))

    def _load_file(self, kind: str, path: Path, table: str) -> None:
        try:
            self.con.execute(f"CREATE OR REPLACE TABLE {table} AS {view_select_sql(kind, read_json_sql(kind, path))}")
            bad = self._violations(kind, table)
        except duckdb.Error:
            bad = -1
        if bad:
            self._load_canonical(kind, path, table)

    def _load_cached(self, kind: str, path: Path, table: str, cache: TableCache) -> bool:
        """Fill `table` from the cache plus the lines appended since; False when the cache does not apply."""
        cov = cache.load_into(self.con, table, path)
        if cov is None:
            return False
        now = path.stat()
        end = whole_lines_end(path, cov.size, now.st_size)
        if end == cov.size:
            return True
        delta = q(f"_new_{VIEW_NAMES[kind]}")
        fd, tmp = tempfile.mkstemp(prefix=f"graphlemon-{kind}-", suffix=".ndjson")
        try:
            with os.fdopen(fd, "wb") as out:
                crc = copy_range(path, cov.size, end, out, cov.crc)
            self.con.execute(f"CREATE TEMP TABLE {delta} AS {view_select_sql(kind, read_json_sql(kind, tmp))}")
            bad = self._violations(kind, delta)
        except (OSError, duckdb.Error):
            bad = -1
        finally:
            os.unlink(tmp)
        if not bad:
            self.con.execute(f"INSERT INTO {table} SELECT * FROM {delta}")
        self.con.execute(f"DROP TABLE IF EXISTS {delta}")
        if bad:
            self.con.execute(f"DELETE FROM {table}")
            return False  # the new lines need the validating path: load the whole file
        cache.store(self.con, table, Coverage(cov.inode, end, crc, now.st_ctime_ns))
        return True

    def _violations(self, kind: str, table: str) -> int:
        return self.con.execute(violations_sql(kind, table)).fetchone()[0]  # type: ignore[index]

    def _load_canonical(self, kind: str, path: Path, table: str) -> None:
        """Slow path: validate (and migrate) every line through the ledger, load the canonical records."""
        records = Ledger(self.state_dir).read(kind)  # LEDGER_CORRUPT names file and line
        fd, tmp = tempfile.mkstemp(prefix=f"graphlemon-{kind}-", suffix=".ndjson")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.writelines(encode(r) for r in records)
            self.con.execute(f"CREATE OR REPLACE TABLE {table} AS {view_select_sql(kind, read_json_sql(kind, tmp))}")
            bad = self._violations(kind, table)
        except duckdb.Error as exc:
            raise GraphLemonError(
                ErrorCode.LEDGER_CORRUPT, f"{path}: DuckDB cannot read the validated records: {exc}", file=str(path)
            ) from None
        finally:
            os.unlink(tmp)
        if bad:
            raise GraphLemonError(
                ErrorCode.LEDGER_CORRUPT, f"{path}: {bad} validated record(s) fail the analytics checks", file=str(path)
            )


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def shell_init_sql(state_dir: Path | str) -> str:
    """The view DDL for the DuckDB shell (`duckdb -init FILE`): the same views, read lazily, unvalidated."""
    state_dir = Path(state_dir).resolve()
    lines = [
        f"-- GraphLemon ledger views over {state_dir}",
        "-- generated by `graphlemon sql --shell-init`; the views read the ndjson files on every query",
        "-- and do not validate them (`graphlemon sql` does). Re-run after a new ledger file appears.",
        "SET TimeZone = 'UTC';",
    ]
    for kind, file in LEDGER_FILES.items():
        path = state_dir / file
        if path.is_file():
            source = read_json_sql(kind, path)
        else:
            lines.append(f"-- {file} does not exist yet: an empty view with the same columns")
            source = empty_source_sql(kind)
        lines.append(f"CREATE OR REPLACE VIEW {q(VIEW_NAMES[kind])} AS {view_select_sql(kind, source)};")
    lines.extend(f"{ddl};" for ddl in derived_ddl("VIEW"))
    return "\n".join(lines) + "\n"


READ_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})  # SELECT covers WITH, DESCRIBE, SHOW and SUMMARIZE


def _only_reads(sql: str) -> None:
    """The ledger views are read-only: any statement that writes, loads or configures is INVALID_PARAM (DuckDB's
    own parser says what each statement is)."""
    try:
        kinds = [statement.type.name for statement in duckdb.extract_statements(sql)]
    except duckdb.Error as exc:
        raise invalid_param(f"SQL error: {exc}") from None
    refused = [kind for kind in kinds if kind not in READ_STATEMENTS]
    if refused:
        raise invalid_param(
            f"graphlemon sql only reads the ledger; refused {', '.join(sorted(set(refused)))} "
            "(the ledger changes only through graphlemon's own commands)"
        )
