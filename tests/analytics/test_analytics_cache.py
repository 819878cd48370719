"""The Parquet cache of the ledger tables: the same tables as a fresh parse, appended lines picked
up, and a changed, replaced or corrupt ledger never hidden behind it."""

from __future__ import annotations

import threading
import time

import duckdb
import pandas as pd
import pytest
from analytics_synthetic import build

from graphlemon.analytics import LedgerDB, cache
from graphlemon.analytics.schema import VIEW_NAMES
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.ledger import Ledger
from graphlemon.models import LEDGER_FILES, RunRecord

DERIVED = ["bug_state", "run_failures", "task_state", "budget_limits"]


def tables(state, *, cache: bool = True) -> dict[str, pd.DataFrame]:
    """Every table: ledger tables in file order, derived ones (GROUP BY: any order) sorted."""
    with LedgerDB(state, cache=cache) as db:
        ledger = {name: db.frame(f"SELECT * FROM {name}") for name in VIEW_NAMES.values()}
        return ledger | {name: db.frame(f"SELECT * FROM {name} ORDER BY ALL") for name in DERIVED}


def assert_same(got: dict[str, pd.DataFrame], expected: dict[str, pd.DataFrame]) -> None:
    assert list(got) == list(expected)
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(got[name], frame, obj=name)


@pytest.fixture
def no_parsing(monkeypatch):
    """Make a full parse of any ledger file fail the test: only the cache (and new lines) may be read."""

    def refuse(self, kind, path, table):
        pytest.fail(f"{path} was parsed in full")

    return lambda: monkeypatch.setattr(LedgerDB, "_load_file", refuse)


def cached_files(state) -> set[str]:
    return {p.name for p in (state / "cache" / "analytics").glob("*.parquet")}


def test_a_cached_load_gives_the_same_tables_without_parsing_the_ledger(tmp_path, no_parsing):
    state = tmp_path / ".graphlemon"
    Ledger(state).append(*build(3).all())
    fresh = tables(state, cache=False)
    assert not (state / "cache").exists()  # cache=False writes nothing
    assert_same(tables(state), fresh)  # builds the cache
    written = {f"{VIEW_NAMES[k]}.parquet" for k, f in LEDGER_FILES.items() if (state / f).is_file()}
    assert cached_files(state) == written
    no_parsing()
    assert_same(tables(state), fresh)


def test_lines_appended_since_are_parsed_alone_and_the_cache_moves_on(tmp_path, no_parsing):
    state = tmp_path / ".graphlemon"
    records = build(5).all()
    Ledger(state).append(*records[::2])  # some of every kind
    tables(state)
    Ledger(state).append(*records[1::2])
    expected = tables(state, cache=False)
    no_parsing()
    assert_same(tables(state), expected)  # old rows from the cache, new ones parsed
    assert_same(tables(state), expected)  # and the cache now covers them: nothing parsed twice
    runs = state / LEDGER_FILES["run"]
    cov = cache.TableCache(state, "run").coverage(duckdb.connect())
    assert cov is not None and cov.size == runs.stat().st_size


def _runs(*run_ids: str) -> str:
    return "".join(
        RunRecord(run_id=r, scope="unit", ok=True).model_dump_json(exclude_none=True) + "\n" for r in run_ids
    )


def run_ids(state) -> list[str]:
    with LedgerDB(state) as db:
        return list(db.frame("SELECT run_id FROM runs")["run_id"])


@pytest.mark.parametrize("trust_ctime", [False, True], ids=["crc", "ctime"])
def test_an_edit_inside_the_cached_bytes_is_seen(tmp_path, monkeypatch, trust_ctime):
    if trust_ctime:  # the fast check (status-change time) instead of the bytes
        monkeypatch.setattr(cache, "_RACY_NS", 0)
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1", "r2", "r3"))
    assert run_ids(tmp_path) == ["r1", "r2", "r3"]
    time.sleep(0.05)  # let the clock move on, so the edit has a later status-change time
    runs.write_text(_runs("r1", "r7", "r3"))  # same length, same inode
    assert run_ids(tmp_path) == ["r1", "r7", "r3"]


def test_a_corrupt_line_in_the_cached_bytes_is_still_ledger_corrupt(tmp_path):
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1", "r2", "r3"))
    run_ids(tmp_path)
    runs.write_text(runs.read_text().replace('"unit"', '"xxxx"', 2))
    with pytest.raises(GraphLemonError) as err:
        LedgerDB(tmp_path)
    assert err.value.code == ErrorCode.LEDGER_CORRUPT and err.value.context["line"] == 1


def test_a_corrupt_appended_line_is_ledger_corrupt_with_its_line_number(tmp_path):
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1", "r2"))
    run_ids(tmp_path)
    with open(runs, "a") as fh:
        fh.write(_runs("r3") + '{"kind": "run", "run_id": "r4", "scope": "galaxy", "ok": true}\n')
    with pytest.raises(GraphLemonError) as err:
        LedgerDB(tmp_path)
    assert err.value.code == ErrorCode.LEDGER_CORRUPT and err.value.context == {"file": str(runs), "line": 4}


def test_a_replaced_or_shorter_ledger_file_is_loaded_afresh(tmp_path):
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1", "r2", "r3"))
    run_ids(tmp_path)
    new = tmp_path / "runs.new"
    new.write_text(_runs("r1", "r2", "r3", "r4"))
    new.replace(runs)  # another inode that starts with the same bytes
    assert run_ids(tmp_path) == ["r1", "r2", "r3", "r4"]
    runs.write_text(_runs("r9"))  # shorter
    assert run_ids(tmp_path) == ["r9"]


def test_a_half_written_new_line_waits_for_its_newline(tmp_path):
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1"))
    run_ids(tmp_path)
    whole = _runs("r2")
    with open(runs, "a") as fh:  # a writer is mid-append: LedgerDB repairs the torn tail first
        fh.write(whole + whole[:10])
    assert run_ids(tmp_path) == ["r1", "r2"]
    assert cache.whole_lines_end(runs, 0, runs.stat().st_size) == runs.stat().st_size


@pytest.mark.parametrize("damage", ["garbage", "other schema"])
def test_an_unusable_cache_is_ignored_and_rebuilt(tmp_path, damage):
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1", "r2"))
    run_ids(tmp_path)
    parquet = tmp_path / "cache" / "analytics" / "runs.parquet"
    if damage == "garbage":
        parquet.write_bytes(b"PAR1 not really")
    else:  # a valid cache of another table, under this name
        Ledger(tmp_path).append(*build(1).tasks)
        run_ids(tmp_path)
        (tmp_path / "cache" / "analytics" / "tasks.parquet").replace(parquet)
    assert run_ids(tmp_path) == ["r1", "r2"]
    assert cache.TableCache(tmp_path, "run").coverage(duckdb.connect()) is not None  # rebuilt


def test_a_project_where_the_cache_cannot_be_written_still_reports(tmp_path):
    (tmp_path / LEDGER_FILES["run"]).write_text(_runs("r1"))
    (tmp_path / "cache").write_text("a file where the cache folder would go")
    assert run_ids(tmp_path) == ["r1"]
    assert run_ids(tmp_path) == ["r1"]
    assert not list(tmp_path.glob("cache*/**/*.tmp"))


def test_readers_racing_a_writer_never_see_a_line_twice_or_out_of_order(tmp_path):
    """Loads (building, reusing and extending the cache) while the DevLoop appends: each load sees a
    prefix of what was written, each line once."""
    ledger = Ledger(tmp_path)
    ledger.append(*(RunRecord(run_id=f"r{i:04d}", scope="unit", ok=True) for i in range(50)))
    written = [f"r{i:04d}" for i in range(400)]
    seen: list[list[str]] = []
    errors: list[BaseException] = []

    def write() -> None:
        for start in range(50, 400, 10):
            ledger.append(*(RunRecord(run_id=r, scope="unit", ok=True) for r in written[start : start + 10]))
            time.sleep(0.02)  # let loads land between appends (and extend the cache)

    def read() -> None:
        try:
            for _ in range(8):
                seen.append(run_ids(tmp_path))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(seen) == 24
    for ids in seen:
        assert ids == written[: len(ids)]
    assert run_ids(tmp_path) == written


def test_what_killed_readers_left_behind_is_swept_after_an_hour(tmp_path, monkeypatch):
    runs = tmp_path / LEDGER_FILES["run"]
    runs.write_text(_runs("r1"))
    run_ids(tmp_path)
    folder = tmp_path / "cache" / "analytics"
    leftover = folder / ".runs.parquet.4242.0badcafe.read"
    leftover.write_bytes(b"x")
    with open(runs, "a") as fh:
        fh.write(_runs("r2"))
    run_ids(tmp_path)  # stores the cache again: a fresh leftover may belong to a live reader
    assert leftover.exists()
    later = time.time() + 3601
    monkeypatch.setattr(cache.time, "time", lambda: later)
    with open(runs, "a") as fh:
        fh.write(_runs("r3"))
    assert run_ids(tmp_path) == ["r1", "r2", "r3"]
    assert not leftover.exists() and (folder / "runs.parquet").exists()
