"""REQ-15 decisions as tables: the deployment lifecycle, the signal judgements, the fold of deployment events."""

from __future__ import annotations

from datetime import timedelta
from typing import get_args

import pytest

from graphlemon import lifecycle
from graphlemon.deploy import health_signals as hs
from graphlemon.deploy.deployments import ROLLBACK_FAILED_MESSAGE, DeploymentBook
from graphlemon.errors import GraphLemonError
from graphlemon.ledger import Ledger
from graphlemon.models import DeploymentStatus, NodeEvent, RunRecord, utcnow

NOW = utcnow()
BEFORE, AFTER = NOW - timedelta(hours=1), NOW + timedelta(seconds=1)


def test_deployment_table_has_exactly_the_seed_states():
    assert set(lifecycle.DEPLOYMENT) - {"_initial"} == set(get_args(DeploymentStatus))
    assert len(get_args(DeploymentStatus)) == 14


@pytest.mark.parametrize(
    "path",
    [
        ["staged", "candidate_starting", "health_check_running", "health_check_passed", "cutover_in_progress", "live",
         "monitoring", "monitoring_window_clean", "finalized"],
        ["staged", "candidate_starting", "health_check_running", "health_check_failed", "rolled_back"],  # path A
        ["staged", "candidate_starting", "health_check_failed", "rolled_back"],  # the candidate never answered
        ["live", "monitoring", "anomaly_detected", "rolled_back"],  # path B
        ["monitoring", "anomaly_detected", "rollback_failed", "blocked_pending_human", "rolled_back"],
    ],
)  # fmt: skip
def test_allowed_paths(path):
    for a, b in zip(path, path[1:], strict=False):
        lifecycle.check("deployment", a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [("health_check_failed", "health_check_running"),  # path A: no retry
     ("staged", "live"), ("health_check_running", "cutover_in_progress"), ("rolled_back", "staged"),
     ("rollback_failed", "rolled_back"), ("health_check_passed", "finalized")],
)  # fmt: skip
def test_refused_moves(a, b):
    with pytest.raises(GraphLemonError) as err:
        lifecycle.check("deployment", a, b)
    assert err.value.code == "INVALID_TRANSITION"


def _runs(before: list[bool], window: list[bool]) -> list[RunRecord]:
    return [RunRecord(run_id=f"b{i}", scope="validation", ok=ok, ts=BEFORE) for i, ok in enumerate(before)] + [
        RunRecord(run_id=f"w{i}", scope="validation", ok=ok, ts=AFTER) for i, ok in enumerate(window)
    ]


@pytest.mark.parametrize(
    ("before", "window", "threshold", "ok", "value"),
    [
        ([True] * 8 + [False] * 2, [False] * 5, 0.2, False, 0.0),  # 0.0 vs 0.8: anomaly
        ([True] * 8 + [False] * 2, [True] * 3 + [False] * 1, 0.2, True, 0.75),  # 0.75 vs 0.8: within
        ([True] * 8 + [False] * 2, [True] * 2 + [False] * 2, 0.2, False, 0.5),  # 0.5 vs 0.8: 0.3 off ...
        ([True] * 8 + [False] * 2, [True] * 2 + [False] * 2, 0.4, True, 0.5),  # ... and the threshold decides
        ([True] * 8 + [False] * 2, [False] * 2, 0.2, True, 0.0),  # two runs: too few to judge
        ([], [False] * 5, 0.2, True, 0.0),  # no baseline: not judged
        ([False] * 5, [True] * 5, 0.2, False, 1.0),  # a jump up is a deviation too
    ],
)  # fmt: skip
def test_validator_approval_rate(before, window, threshold, ok, value):
    th = hs.Thresholds(validator_rate_deviation_threshold=threshold)
    sig = hs.validator_approval_rate("d", _runs(before, window), NOW, th)
    assert (sig.ok, sig.value) == (ok, value)
    assert sig.signal == "validator_approval_rate" and sig.threshold == threshold


def test_unit_runs_do_not_count_as_validations():
    runs = _runs([True] * 5, []) + [RunRecord(run_id=f"u{i}", scope="unit", ok=False, ts=AFTER) for i in range(9)]
    assert hs.validator_approval_rate("d", runs, NOW, hs.Thresholds()).value is None


@pytest.mark.parametrize(
    ("statuses", "ok"),
    [(["done"] * 4 + [("failed", "EXECUTOR_ERROR")], True),  # 1/5 = 0.2: at the threshold
     (["done"] * 2 + [("failed", "EXECUTOR_ERROR")] * 2, False),
     ([("failed", None)] * 4, True),  # failed without an error code: a result, not an engine error
     ([("failed", "GIT_ERROR")] * 2, True)],  # too few to judge
)  # fmt: skip
def test_task_error_rate(statuses, ok):
    nodes = []
    for i, s in enumerate(statuses):
        status, code = (s, None) if isinstance(s, str) else s
        nodes.append(NodeEvent(node_exec_id=f"n{i}", stage="coder", status=status, error_code=code, ts=AFTER))
    nodes.append(NodeEvent(node_exec_id="old", stage="coder", status="failed", error_code="X", ts=BEFORE))
    assert hs.task_error_rate("d", nodes, NOW, hs.Thresholds()).ok is ok


@pytest.mark.parametrize(
    ("reading", "ok"),
    [(hs.HealthReading(status=200, commit="c1"), True), (hs.HealthReading(status=200, commit="c0"), False),
     (hs.HealthReading(status=503, commit="c1"), False), (hs.HealthReading(error="refused"), False)],
)  # fmt: skip
def test_health_endpoint(reading, ok):
    assert hs.health_endpoint("d", "monitoring", reading, "c1").ok is ok


@pytest.mark.parametrize(("alive", "reported", "ok"), [(True, 10, True), (True, None, True), (False, 10, False),
                                                       (True, 11, False)])  # fmt: skip
def test_process_restarts(alive, reported, ok):
    assert hs.process_restarts("d", "monitoring", 10, alive, reported).ok is ok


def test_book_folds_and_refuses_a_second_deployment(tmp_path):
    book = DeploymentBook(Ledger(tmp_path))
    dep = book.stage(commit="c1", previous_commit="c0", previous_instance_dir="/i/c0")
    with pytest.raises(GraphLemonError) as err:
        book.stage(commit="c2")
    assert err.value.code == "INVALID_TRANSITION"
    book.move(dep.deployment_id, "candidate_starting", port=4000, pid=123)
    with pytest.raises(GraphLemonError):
        book.move(dep.deployment_id, "live")
    book.move(dep.deployment_id, "health_check_failed")
    book.move(dep.deployment_id, "rollback_failed", blocked_reason="rollback_failed")
    folded = book.move(dep.deployment_id, "blocked_pending_human", blocked_reason="rollback_failed")
    assert (folded.port, folded.pid, folded.commit, folded.blocked_reason) == (4000, 123, "c1", "rollback_failed")
    assert [e.status for e in folded.timeline][0] == "staged" and len(folded.timeline) == 5
    assert ROLLBACK_FAILED_MESSAGE in folded.what_to_do() and "/i/c0" in folded.what_to_do()
    assert book.active().deployment_id == dep.deployment_id  # blocked is not over


@pytest.mark.system
def test_a_person_rolls_back_a_deployment_its_supervisor_left_before_cutover(tmp_path):
    """The supervisor stopped during the health check: `deploy rollback` fails it (path A): candidate stopped,
    commit reverted, core_engine bug filed; the live instance is not involved."""
    import subprocess

    from graphlemon.bugs import BugTracker
    from graphlemon.deploy.supervisor import Supervisor
    from graphlemon.project import init_project

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "a.txt").write_text("1\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], cwd=repo, check=True)
    (repo / "a.txt").write_text("2\n")
    subprocess.run([*git, "commit", "-q", "-am", "two"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    handle = init_project(repo).project
    sup = Supervisor(handle)
    gone = subprocess.Popen(["true"], start_new_session=True)
    gone.wait()
    dep = sup.book.stage(commit=head)
    sup.book.move(dep.deployment_id, "candidate_starting", pid=gone.pid, port=1)
    sup.book.move(dep.deployment_id, "health_check_running")
    dep = sup.rollback(by="human")
    assert [e.status for e in dep.timeline][-2:] == ["health_check_failed", "rolled_back"]
    assert (repo / "a.txt").read_text() == "1\n" and dep.revert_commit
    assert BugTracker(handle.ledger).get(dep.bug_id).root_cause_category == "core_engine"
    with pytest.raises(GraphLemonError) as err:
        sup.rollback(dep.deployment_id)
    assert err.value.code == "INVALID_TRANSITION"  # rolled back: nothing left to roll back
