"""The single writer: a unit loop run on a scratch copy (as a worker without the project's filesystem runs it)
returns its records, the devloop appends them, once."""

from __future__ import annotations

import base64
import json

import pytest
from scale_kit import CALC, IsolatedEngine, ledger_view, make_project, run_goal, tree

from graphlemon.devloop.remote_records import (
    OUTCOMES,
    StateFile,
    UnitRecords,
    absorb,
    collect,
    mark_state,
    pack_state,
    unpack_state,
)
from graphlemon.devloop.remote_unit import FolderStore, dispatch, run_remote_unit, take_in
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.stages.session import LoopSession
from graphlemon.taskboard import TaskBoard


def _sizes(state_dir):
    return {p.name: p.stat().st_size for p in state_dir.glob("*.ndjson")}


@pytest.mark.system
def test_isolated_units_leave_the_same_ledger_and_tree_as_in_process_units(tmp_path):
    direct = make_project(tmp_path / "direct" / "calc")
    isolated = make_project(tmp_path / "isolated" / "calc")
    a = run_goal(direct)
    b = run_goal(isolated, engine=IsolatedEngine(tmp_path / "store", tmp_path / "scratch"))
    assert (a.status, a.loop_round) == (b.status, b.loop_round) == ("done", 0)
    assert ledger_view(isolated.state_dir) == ledger_view(direct.state_dir)
    assert tree(isolated) == tree(direct)
    # the unit loops ran on scratch clones: the project has no work tree of a unit, only the integration one
    worktrees = isolated.state_dir / "worktrees" / a.task_id.replace(a.task_id, b.task_id)
    assert sorted(p.name for p in worktrees.iterdir() if p.is_dir()) == ["_integration"]


def _one_unit(tmp_path, fixture=CALC, before_the_worker=lambda job: None):
    """A planned calc task and the result of its unit `add` run on a scratch copy, not yet taken in."""
    handle = make_project(tmp_path / "calc")
    task = TaskBoard(handle.ledger).create("calc")
    session = LoopSession.start(handle, task.task_id, executor="scripted", playbook=fixture / "playbook.yaml")
    from graphlemon.devloop.stages import Stages

    with session.bound():
        Stages(session.run).plan(0, None)
        store = FolderStore(tmp_path / "store")
        job = dispatch(session, "add", 0, None, "", store, sharing=2)
    before_the_worker(job)
    result = run_remote_unit(job, store, tmp_path / "worker")
    return session, job, result


@pytest.mark.system
def test_a_result_taken_in_twice_adds_nothing(tmp_path):
    session, job, result = _one_unit(tmp_path)
    assert result.outcome is not None and result.outcome.green and result.records.count() > 5
    with session.bound():
        first = take_in(session, job, result)
        after_first = _sizes(session.project.state_dir)
        again = take_in(session, job, result)
    assert again == first and first.green
    assert _sizes(session.project.state_dir) == after_first
    # even past the outcome check every record is there (the outcome itself names the devloop's merge commit)
    rest = {name: lines for name, lines in result.records.lines.items() if name != OUTCOMES}
    assert absorb(session.ledger, UnitRecords(lines=rest, files=result.records.files)) == 0
    assert session.worktrees.branch("add") in session.worktrees.integration().repo.git.branch("--merged")


@pytest.mark.system
def test_a_devloop_killed_half_way_through_taking_in_completes_it_once(tmp_path):
    session, job, result = _one_unit(tmp_path)
    nodes = {k: v for k, v in result.records.lines.items() if k == "nodes.ndjson"}
    before = session.ledger.read("node")
    assert absorb(session.ledger, UnitRecords(lines=nodes)) == len(nodes["nodes.ndjson"])
    with session.bound():
        take_in(session, job, result)
    after = session.ledger.read("node")
    assert len(after) == len(before) + len(nodes["nodes.ndjson"])  # nothing twice
    assert len({r.model_dump_json() for r in after}) == len(after)


@pytest.mark.system
def test_collect_returns_only_what_was_written_after_the_mark(tmp_path):
    session, job, result = _one_unit(tmp_path)
    state = session.project.state_dir
    mark = mark_state(state)
    assert collect(state, mark).count() == 0
    session.timeline("note", "after the mark")
    (state / "logs" / "extra.txt").parent.mkdir(exist_ok=True)
    (state / "logs" / "extra.txt").write_text("x")
    got = collect(state, mark)
    assert list(got.lines) == ["timeline.ndjson"] and len(got.lines["timeline.ndjson"]) == 1
    assert [f.path for f in got.files] == ["logs/extra.txt"]


@pytest.mark.parametrize(
    "records, code",
    [
        (UnitRecords(files=[StateFile(path="../escape.txt", data="eA==")]), ErrorCode.INVALID_PARAM),
        (UnitRecords(files=[StateFile(path="/etc/passwd", data="eA==")]), ErrorCode.INVALID_PARAM),
        (UnitRecords(files=[StateFile(path="nodes.ndjson", data="eA==")]), ErrorCode.INVALID_PARAM),
        (UnitRecords(files=[StateFile(path="worktrees/t/x", data="eA==")]), ErrorCode.INVALID_PARAM),
        (UnitRecords(files=[StateFile(path="logs/x", data="not base64!")]), ErrorCode.INVALID_PARAM),
        (UnitRecords(lines={"../tasks.ndjson": ["{}"]}), ErrorCode.INVALID_PARAM),
        (UnitRecords(lines={"nodes.ndjson": ['{"kind": "task", "task_id": "t", "status": "queued"}']}),
         ErrorCode.LEDGER_CORRUPT),
        (UnitRecords(lines={"nodes.ndjson": ["\udcff not json"]}), ErrorCode.LEDGER_CORRUPT),
    ],
)  # fmt: skip
def test_a_hostile_result_is_refused_and_writes_nothing(tmp_path, records, code):
    handle = make_project(tmp_path / "calc", remote=False)
    before = _sizes(handle.state_dir)
    with pytest.raises(GraphLemonError) as err:
        absorb(handle.ledger, records)
    assert err.value.code == code
    assert _sizes(handle.state_dir) == before
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize("data", [b"", b"not a tar", base64.b64decode("H4sIAAAAAAAAA+3BAQ0AAADCoPdPbQ8HFAAAAAAAAAAA")])
def test_a_snapshot_that_is_not_a_tar_is_refused(tmp_path, data):
    with pytest.raises(GraphLemonError) as err:
        unpack_state(data, tmp_path / "state")
    assert err.value.code == ErrorCode.INVALID_PARAM


def test_a_snapshot_never_carries_work_trees_or_locks(tmp_path):
    handle = make_project(tmp_path / "calc", remote=False)
    (handle.state_dir / "worktrees" / "t" / "u").mkdir(parents=True)
    (handle.state_dir / "worktrees" / "t" / "u" / "f").write_text("code")
    (handle.state_dir / "goal-slots").mkdir()
    (handle.state_dir / "goal-slots" / "0.lock").write_text("")
    unpack_state(pack_state(handle.state_dir), tmp_path / "copy")
    names = {p.relative_to(tmp_path / "copy").parts[0] for p in (tmp_path / "copy").rglob("*")}
    assert "project.json" in names and not names & {"worktrees", "goal-slots"}


@pytest.mark.system
def test_the_outcome_names_the_devloops_merge_commit(tmp_path):
    session, job, result = _one_unit(tmp_path)
    with session.bound():
        outcome = take_in(session, job, result)
    assert outcome.commit == session.worktrees.integration().head()
    recorded = [json.loads(line) for line in (session.project.state_dir / OUTCOMES).read_text().splitlines()]
    (unit,) = [r for r in recorded if r["node_exec_id"] == job.node_exec_id and r["name"] == "outcome"]
    assert unit["value"]["commit"] == outcome.commit


def test_a_unit_stopped_by_its_budget_allowance_returns_its_records_and_the_devloop_raises_the_stop(tmp_path):
    from graphlemon.agents.budget import budget_status, update_budget
    from graphlemon.devloop.stages import Stages

    handle = make_project(tmp_path / "calc")
    task = TaskBoard(handle.ledger).create("calc")
    session = LoopSession.start(handle, task.task_id, executor="scripted", playbook=CALC / "playbook.yaml")
    with session.bound():
        Stages(session.run).plan(0, None)
        update_budget(session.ledger, task.task_id, 1_000_000, "token_count", by="test")
        used = budget_status(session.ledger, task.task_id).used
        store = FolderStore(tmp_path / "store")
        job = dispatch(session, "add", 0, None, "", store, sharing=4)
        assert job.budget_limit == pytest.approx(used + (1_000_000 - used) / 4)
        job = job.model_copy(update={"budget_limit": max(used, 1.0)})  # nothing left for this unit
    result = run_remote_unit(job, store, tmp_path / "worker")
    assert result.error_code == ErrorCode.BUDGET_EXCEEDED and result.outcome is None
    assert "budget.ndjson" not in result.records.lines  # the allowance stays on the worker
    with session.bound(), pytest.raises(GraphLemonError) as err:
        take_in(session, job, result)
    assert err.value.code == ErrorCode.BUDGET_EXCEEDED
    assert session.nodes.find(job.node_exec_id) is not None  # what the unit wrote before the stop is in the ledger
    assert budget_status(session.ledger, task.task_id).limit_value == 1_000_000


@pytest.mark.system
def test_a_malformed_result_changes_neither_the_ledger_nor_the_integration_branch(tmp_path):
    session, job, result = _one_unit(tmp_path)
    lines = dict(result.records.lines)
    lines[OUTCOMES] = [*lines[OUTCOMES], "{not json"]
    bad = result.model_copy(update={"records": result.records.model_copy(update={"lines": lines})})
    before, head = _sizes(session.project.state_dir), session.worktrees.integration().head()
    with session.bound(), pytest.raises(GraphLemonError) as err:
        take_in(session, job, bad)
    assert err.value.code == ErrorCode.LEDGER_CORRUPT
    assert _sizes(session.project.state_dir) == before and session.worktrees.integration().head() == head


def test_a_job_naming_a_path_outside_the_store_is_refused(tmp_path):
    from graphlemon.devloop.remote_unit import RemoteUnitJob

    with pytest.raises(ValueError):
        RemoteUnitJob(task_id="t", unit_id="u", loop_round=0, remote="file:///r.git", snapshot="../../etc/passwd")


@pytest.mark.system
def test_the_playbook_travels_with_the_job_no_worker_reads_the_devloops_path(tmp_path):
    import shutil

    fixture = tmp_path / "fixture"
    shutil.copytree(CALC, fixture)

    def gone(job) -> None:
        shutil.rmtree(fixture)  # the worker's machine has no such path
        assert job.playbook is not None and (tmp_path / "store" / job.playbook).is_file()

    _, _, result = _one_unit(tmp_path, fixture, gone)
    assert result.error is None and result.outcome is not None and result.outcome.green
