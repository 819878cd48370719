"""The append-only ledger: atomic appends across processes, torn-tail repair, corruption, validation."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from graphlemon import ledger as ledger_mod
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.ledger import Ledger
from graphlemon.models import BugEvent, TimelineEvent

WRITER = textwrap.dedent(
    """
    import sys
    from graphlemon.ledger import Ledger
    from graphlemon.models import TimelineEvent
    state, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ledger = Ledger(state)
    for i in range(count):
        ledger.append(TimelineEvent(event="tick", ref=f"{writer}:{i}", summary="x" * (i % 300)))
    """
)


def _spawn(*args: str, code: str = WRITER) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args])


@pytest.mark.system
def test_eight_processes_append_without_interleaving(tmp_path: Path):
    writers = [_spawn(str(tmp_path), f"w{n}", "2000") for n in range(8)]
    assert [p.wait(timeout=300) for p in writers] == [0] * 8
    raw = (tmp_path / "timeline.ndjson").read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    lines = lines[:-1]
    assert len(lines) == 16_000
    seen: dict[str, list[int]] = {}
    for line in lines:
        obj = json.loads(line)  # every line is one whole JSON object
        writer, i = obj["ref"].split(":")
        seen.setdefault(writer, []).append(int(i))
    assert {w: len(v) for w, v in seen.items()} == {f"w{n}": 2000 for n in range(8)}
    assert all(v == sorted(v) for v in seen.values())  # each writer's lines in its own order
    assert len(Ledger(tmp_path).read("timeline")) == 16_000


TORN_WRITER = textwrap.dedent(
    """
    import fcntl, os, sys, time
    path = sys.argv[1]
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b'{"kind":"timeline","event":"tick","ref":"torn","summ')  # first half of a line
    os.fsync(fd)
    print("ready", flush=True)
    time.sleep(60)  # killed here, mid-append
    """
)


@pytest.mark.system
def test_writer_killed_mid_append_leaves_a_torn_tail_that_is_repaired(tmp_path: Path, caplog):
    ledger = Ledger(tmp_path)
    ledger.append(*(TimelineEvent(event="tick", ref=str(i)) for i in range(5)))
    before = (tmp_path / "timeline.ndjson").read_bytes()
    proc = subprocess.Popen(
        [sys.executable, "-c", TORN_WRITER, str(tmp_path / "timeline.ndjson")], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "timeline.ndjson").read_bytes().endswith(b"\n")

    fresh = Ledger(tmp_path)  # "next open"
    records = fresh.read("timeline")
    assert [r.ref for r in records] == [str(i) for i in range(5)]
    assert (tmp_path / "timeline.ndjson").read_bytes() == before  # complete lines intact, tail gone
    assert fresh.repairs and fresh.repairs[0].action == "truncated"
    assert "torn final line" in caplog.text
    fresh.append(TimelineEvent(event="tick", ref="after"))
    assert [r.ref for r in Ledger(tmp_path).read("timeline")][-1] == "after"


@pytest.mark.system
def test_random_sigkill_during_appends_never_corrupts(tmp_path: Path):
    rng = random.Random(7)
    for round_ in range(6):
        path = tmp_path / "timeline.ndjson"
        size = path.stat().st_size if path.exists() else 0
        proc = _spawn(str(tmp_path), f"r{round_}", "100000")
        deadline = time.monotonic() + 60  # a loaded machine may take seconds to start the writer
        while (path.stat().st_size if path.exists() else 0) <= size and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.random() * 0.5)  # then kill it at a random point of its appends
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        records = Ledger(tmp_path).read("timeline")  # repairs whatever was left
        assert records, "the writer should have appended something before being killed"
    raw = (tmp_path / "timeline.ndjson").read_bytes()
    assert raw.endswith(b"\n")
    assert all(json.loads(line) for line in raw.splitlines())


def test_writer_appends_after_a_torn_tail_repair(tmp_path: Path):
    path = tmp_path / "timeline.ndjson"
    Ledger(tmp_path).append(TimelineEvent(event="a"))
    with path.open("ab") as fh:
        fh.write(b'{"kind":"timel')
    writer = Ledger(tmp_path)
    writer.append(TimelineEvent(event="b"))  # the writer repairs under its lock before writing
    assert [r.event for r in Ledger(tmp_path).read("timeline")] == ["a", "b"]
    assert writer.repairs[0].dropped_bytes == len(b'{"kind":"timel')


def test_valid_final_line_without_newline_is_completed_not_dropped(tmp_path: Path):
    path = tmp_path / "timeline.ndjson"
    line = TimelineEvent(event="kept").model_dump_json()
    path.write_bytes(line.encode())  # e.g. hand-edited, no trailing newline
    ledger = Ledger(tmp_path)
    assert [r.event for r in ledger.read("timeline")] == ["kept"]
    assert path.read_bytes() == line.encode() + b"\n"
    assert ledger.repairs[0].action == "completed"


@pytest.mark.parametrize(
    "bad_line, why",
    [
        (b"{not json", "not JSON"),
        (b'{"kind":"timeline","event":1}', "invalid record"),
        (b'{"kind":"bug","bug_id":"b","event":"open","status":"open"}', "does not belong"),
        (b'["a list"]', "not a JSON object"),
        (b'{"kind":"timeline","event":"x","schema_version":99}', "newer"),
    ],
)
def test_corrupt_line_in_the_middle_is_ledger_corrupt_naming_file_and_line(tmp_path: Path, bad_line, why):
    good = [TimelineEvent(event=str(i)).model_dump_json().encode() for i in range(3)]
    path = tmp_path / "timeline.ndjson"
    path.write_bytes(b"\n".join([good[0], good[1], bad_line, good[2]]) + b"\n")
    before = path.read_bytes()
    ledger = Ledger(tmp_path)
    for _ in range(2):  # asked again, the same ledger names the same line: a failed parse changes nothing
        with pytest.raises(GraphLemonError) as info:
            ledger.read("timeline")
        err = info.value
        assert err.code == ErrorCode.LEDGER_CORRUPT
        assert err.context["line"] == 3 and err.context["file"] == str(path)
        assert f"{path}:3" in err.message and why in err.message
    assert path.read_bytes() == before  # nothing rewritten


def test_write_is_validated_and_a_bad_record_writes_nothing(tmp_path: Path):
    ledger = Ledger(tmp_path)
    bad = BugEvent.model_construct(bug_id="b1", event="open", status="not-a-status", kind="bug")
    with pytest.raises(ValueError):  # pydantic's ValidationError
        ledger.append(TimelineEvent(event="ok"), bad)
    assert not (tmp_path / "bugs.ndjson").exists() or (tmp_path / "bugs.ndjson").read_bytes() == b""
    assert not (tmp_path / "timeline.ndjson").exists()


def test_old_schema_versions_are_migrated_on_read(tmp_path: Path, monkeypatch):
    def rename_text_to_summary(raw: dict) -> dict:
        raw["summary"] = raw.pop("text")
        return raw

    monkeypatch.setitem(ledger_mod.MIGRATIONS, ("timeline", 0), rename_text_to_summary)
    (tmp_path / "timeline.ndjson").write_text('{"kind":"timeline","event":"e","text":"old","schema_version":0}\n')
    [record] = Ledger(tmp_path).read("timeline")
    assert record.summary == "old" and record.schema_version == 1


def test_missing_migration_is_reported(tmp_path: Path):
    (tmp_path / "timeline.ndjson").write_text('{"kind":"timeline","event":"e","schema_version":0}\n')
    with pytest.raises(GraphLemonError, match="no migration"):
        Ledger(tmp_path).read("timeline")


def test_reads_are_incremental_and_see_other_writers(tmp_path: Path):
    reader, writer = Ledger(tmp_path), Ledger(tmp_path)
    assert reader.read("timeline") == []
    writer.append(TimelineEvent(event="1"))
    assert [r.event for r in reader.read("timeline")] == ["1"]
    writer.append(TimelineEvent(event="2"), TimelineEvent(event="3"))
    assert [r.event for r in reader.read("timeline")] == ["1", "2", "3"]


def test_threads_sharing_one_ledger_read_and_append_consistently(tmp_path: Path):
    """The DevLoop's parallel units share one Ledger: concurrent reads must not parse the same bytes twice
    (duplicate records, then an offset past a line start: LEDGER_CORRUPT "not JSON" on a sound file)."""
    ledger, writers, per_writer = Ledger(tmp_path), 4, 300
    problems: list[BaseException] = []

    def write(w: int) -> None:
        for i in range(per_writer):
            ledger.append(TimelineEvent(event="tick", ref=f"{w}:{i}", summary="x" * (i % 200)))
            if i % 10 == 0:
                with ledger.transaction("timeline") as tx:  # a locked read-decide-append, as bug_open does
                    tx.append(TimelineEvent(event="tx", ref=f"{w}:{i}:{len(tx.records())}"))

    def read() -> None:
        while any(t.is_alive() for t in pool[:writers]):
            refs = [r.ref for r in ledger.read("timeline") if r.event == "tick"]
            assert len(refs) == len(set(refs)), "a record was parsed twice"

    def guarded(fn, *args):
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - reported below
            problems.append(exc)

    pool = [threading.Thread(target=guarded, args=(write, w)) for w in range(writers)]
    pool += [threading.Thread(target=guarded, args=(read,)) for _ in range(4)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not problems, problems[:3]
    ticks = [r.ref for r in ledger.read("timeline") if r.event == "tick"]
    assert sorted(ticks) == sorted(f"{w}:{i}" for w in range(writers) for i in range(per_writer))
    assert len(Ledger(tmp_path).read("timeline")) == len(ledger.read("timeline"))  # a fresh reader agrees


def test_transaction_holds_the_lock_across_read_and_append(tmp_path: Path):
    ledger = Ledger(tmp_path)
    with ledger.transaction("timeline") as tx:
        assert tx.records() == []
        tx.append(TimelineEvent(event="inside"))
        with pytest.raises(GraphLemonError):
            tx.append(BugEvent(bug_id="b", event="open", status="open"))  # wrong file
    assert [r.event for r in ledger.read("timeline")] == ["inside"]


def test_unknown_kind_is_invalid_param(tmp_path: Path):
    with pytest.raises(GraphLemonError) as info:
        Ledger(tmp_path).read("nope")
    assert info.value.code == ErrorCode.INVALID_PARAM


def test_error_survives_pickling():
    import pickle

    err = GraphLemonError(ErrorCode.LEDGER_CORRUPT, "f:3: bad", file="f", line=3)
    back = pickle.loads(pickle.dumps(err))
    assert (back.code, back.message, back.context) == (err.code, err.message, err.context)


def test_each_record_kind_is_declared_once_and_names_its_own_file():
    from typing import Literal

    from graphlemon.models import LEDGER_FILES, RECORD_ADAPTER, RECORD_TYPES, Record

    assert list(LEDGER_FILES) == list(RECORD_TYPES) and len(set(LEDGER_FILES.values())) == len(LEDGER_FILES)
    assert all(LEDGER_FILES[kind] == model.ledger_file for kind, model in RECORD_TYPES.items())
    assert type(RECORD_ADAPTER.validate_python({"kind": "log_retention", "retention_days": 3})) is RECORD_TYPES["log_retention"]
    with pytest.raises(TypeError, match="declared twice"):

        class AgainTask(Record):
            ledger_file = "tasks2.ndjson"
            kind: Literal["task"] = "task"

    with pytest.raises(TypeError, match="must declare its kind and its ledger_file"):

        class NoFile(Record):
            kind: Literal["nofile"] = "nofile"

    assert "nofile" not in RECORD_TYPES and RECORD_TYPES["task"].__name__ == "TaskEvent"
