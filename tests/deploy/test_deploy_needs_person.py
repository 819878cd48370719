"""A deployment that needs a person is never hidden (REQ-15): a failed rollback of an *older* deployment shows in
`deploy rollback`'s output and in `deploy status` (and the console's deploy data) with a command that works as
printed; a refused `deploy stage` says why with no traceback and starts nothing (Prefect is not even imported).

Real git repository, real ledger, the CLI as a real process. The previous instance's directory is damaged (no
GraphLemon in it), so the rollback fails before any process starts."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from graphlemon.deploy import health_signals as hs
from graphlemon.deploy.deploy_view import deployments_view
from graphlemon.deploy.health_signals import Thresholds
from graphlemon.deploy.instances import Instance
from graphlemon.deploy.supervisor import Supervisor, SupervisorState
from graphlemon.models import NodeEvent, utcnow
from graphlemon.project import init_project, update_settings

pytestmark = pytest.mark.system

HAPPY = ["candidate_starting", "health_check_running", "health_check_passed", "cutover_in_progress", "live",
         "monitoring", "monitoring_window_clean", "finalized"]  # fmt: skip
# the CLI in a real process; on its way out it says whether Prefect was imported at all
PROBE = "import sys\ntry:\n    from graphlemon.cli import main; main(sys.argv[1:])\nfinally:\n    print('prefect imported:', 'prefect' in sys.modules, file=sys.stderr)\n"


def _git(repo, *args) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def two_finalized(tmp_path):
    """GraphLemon's repository (a stand-in) with two finalized deployments; the older one's previous instance
    directory is damaged."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    commits = []
    for n in range(3):
        (repo / "a.txt").write_text(f"{n}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"c{n}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    handle = init_project(repo).project
    sup = Supervisor(handle, root=tmp_path / "deploy")
    damaged = tmp_path / "deploy" / "instances" / commits[0]
    damaged.mkdir(parents=True)  # a directory with no GraphLemon checkout in it
    older = _finalized(sup, commits[1], commits[0], damaged)
    newer_previous = tmp_path / "deploy" / "instances" / commits[1]
    newer = _finalized(sup, commits[2], commits[1], newer_previous)
    live = Instance(commit=commits[2], dir=str(newer_previous), port=1, pid=2**22 + 1, log="/dev/null")
    sup.root.mkdir(parents=True, exist_ok=True)
    sup._save(SupervisorState(live=live))
    update_settings(handle, self_hosted=True, deploy_root=str(sup.root))
    return handle, sup, older, newer, commits


def _finalized(sup, commit: str, previous: str, previous_dir) -> str:
    dep = sup.book.stage(commit=commit, previous_commit=previous, previous_instance_dir=str(previous_dir))
    for status in HAPPY:
        sup.book.move(dep.deployment_id, status)
    return dep.deployment_id


def _cli(repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, *args, "-p", str(repo)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "400"})  # fmt: skip


def test_a_failed_rollback_of_an_older_deployment_is_shown_with_a_command_that_works_as_printed(two_finalized):
    handle, sup, older, newer, _ = two_finalized
    out = _cli(handle.root, "deploy", "rollback", older)
    assert out.returncode == 1
    assert f"deployment {older}" in out.stdout and "blocked_pending_human" in out.stdout  # the one acted on
    assert f"deployment {newer}" not in out.stdout
    assert "automatic recovery itself failed" in out.stdout and f"graphlemon deploy rollback {older}" in out.stdout
    assert f"the rollback of {older} did not complete" in out.stderr and "Traceback" not in out.stderr

    status = _cli(handle.root, "deploy", "status")
    assert status.returncode == 0 and f"deployment {newer}" in status.stdout  # the latest, finalized
    assert f"needs a person: {older}" in status.stdout and f"graphlemon deploy rollback {older}" in status.stdout
    report = json.loads(_cli(handle.root, "deploy", "status", "--json").stdout)
    [blocked] = report["needs_person"]
    assert (blocked["deployment_id"], blocked["status"], blocked["blocked_reason"]) == (
        older,
        "blocked_pending_human",
        "rollback_failed",
    )
    view = deployments_view(handle.ledger, handle.state_dir)  # what the console's Deploy page reads
    assert [d["deployment_id"] for d in view["needs_person"]] == [older]
    assert f"graphlemon deploy rollback {older}" in view["needs_person"][0]["what_to_do"]

    # the printed command, run as printed: it acts on that deployment (still damaged: blocked again)
    command = blocked["what_to_do"].split("then run `", 1)[1].split("`", 1)[0]
    again = _cli(handle.root, *shlex.split(command)[1:])
    assert again.returncode == 1 and f"deployment {older}" in again.stdout
    assert [e.status for e in sup.book.get(older).timeline][-2:] == ["rollback_failed", "blocked_pending_human"]
    bare = _cli(handle.root, "deploy", "rollback")  # no id: the one that needs a person, never the latest
    assert bare.returncode == 1 and f"deployment {older}" in bare.stdout
    assert sup.book.get(newer).status == "finalized"


def test_a_refused_stage_says_why_without_a_traceback_and_starts_nothing(two_finalized):
    handle, sup, older, _, commits = two_finalized
    assert _cli(handle.root, "deploy", "rollback", older).returncode == 1
    records = len(handle.ledger.read("deployment"))
    out = _cli(handle.root, "deploy", "stage", commits[0])
    assert out.returncode == 1 and out.stderr.startswith("error[INVALID_TRANSITION]")
    assert older in out.stderr and f"graphlemon deploy rollback {older}" in out.stderr
    assert "Traceback" not in out.stderr and "prefect imported: False" in out.stderr
    assert len(handle.ledger.read("deployment")) == records
    live = _cli(handle.root, "deploy", "stage", commits[2])
    assert live.returncode == 2 and "is already live" in live.stderr and "prefect imported: False" in live.stderr


def test_deploy_status_says_which_signals_lacked_data_all_window(two_finalized):
    handle, sup, _, newer, commits = two_finalized
    since, th = utcnow(), Thresholds()
    dep = sup.book.get(newer)
    for _ in range(3):  # three readings of a quiet window: nothing ran, so neither rate could be judged
        sup.book.record(
            hs.health_endpoint(newer, "monitoring", hs.HealthReading(status=200, commit=commits[2]), commits[2]),
            hs.task_error_rate(newer, handle.ledger.read_as("node", NodeEvent), since, th),
            hs.validator_approval_rate(newer, [], since, th),
        )
    assert dep.status == "finalized"
    report = json.loads(_cli(handle.root, "deploy", "status", "--json").stdout)
    assert report["signals_lacking_data"] == ["task_error_rate", "validator_approval_rate"]
    text = _cli(handle.root, "deploy", "status").stdout
    assert "not judged all window" in text and "task_error_rate, validator_approval_rate" in text
    assert text.count("no data") == 2
    view = deployments_view(handle.ledger, handle.state_dir, newer)
    assert view["deployment"]["signals_lacking_data"] == ["task_error_rate", "validator_approval_rate"]
