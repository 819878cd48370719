"""Issue 24.4: a full disk under the ledger ends in `error[LEDGER_WRITE_FAILED]` naming the file, a blocked task
when the task ledger can still take the block, a plain sentence when it cannot — never a traceback; the
ledger keeps whole records and resume still works.

The full disk is real: a ledger file that is a symlink to /dev/full gets ENOSPC from the kernel on every write.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from _loop_helpers import CALC
from conftest import make_repo

from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.ledger import Ledger
from graphlemon.models import RunRecord, TimelineEvent
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")
pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a disk that is always full)")


def _fill(ledger: Ledger, kind: str) -> Path:
    """From now on every write to this ledger file fails with ENOSPC."""
    path = ledger.path(kind)
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/full")
    return path


def _every_line_parses(state_dir: Path) -> None:
    for file in state_dir.glob("*.ndjson"):
        if not file.is_symlink():
            for line in file.read_text().splitlines():
                json.loads(line)
    Ledger(state_dir).read("task")  # and the ledger itself reads them


def test_a_full_disk_under_one_ledger_file_is_an_error_naming_it(tmp_path):
    ledger = Ledger(tmp_path / ".graphlemon")
    ledger.append(TimelineEvent(event="note", summary="before"))
    full = _fill(ledger, "run")
    with pytest.raises(GraphLemonError) as err:
        ledger.append(RunRecord(run_id="r1", scope="unit", ok=True))
    assert err.value.code == ErrorCode.LEDGER_WRITE_FAILED and err.value.exit_code == 1
    assert str(full) in err.value.message and "No space left on device" in err.value.message
    ledger.append(TimelineEvent(event="note", summary="after"))  # the other files are untouched
    assert [e.summary for e in ledger.read_as("timeline", TimelineEvent)] == ["before", "after"]


@pytest.mark.system
def test_a_stage_that_hits_a_full_disk_blocks_the_task_with_the_path_and_resume_finishes(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    task = TaskBoard(project.ledger).create("Build calc")
    runs = _fill(project.ledger, "run")  # the tester's run records cannot be written
    session = LoopSession(project, task.task_id, LoopConfig(playbook=CALC / "playbook.yaml"))
    final = run_devloop(session, Stages(session.run))
    assert (final.status, final.blocked_reason) == ("blocked_pending_human", "stage_failed")
    assert "LEDGER_WRITE_FAILED" in final.note and str(runs) in final.note and "No space left" in final.note
    assert list((project.state_dir / "escalations").glob(f"{task.task_id}-*.md"))  # the evidence pack exists
    _every_line_parses(project.state_dir)

    runs.unlink()  # space again
    TaskBoard(project.ledger).manual_resume(task.task_id, note="disk cleaned")
    again = LoopSession(project, task.task_id, LoopConfig(playbook=CALC / "playbook.yaml"))
    assert run_devloop(again, Stages(again.run)).status == "done"


@pytest.mark.system
def test_when_even_the_block_cannot_be_recorded_the_cli_says_so_plainly(tmp_path, cli):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    _fill(project.ledger, "run")
    pack = _fill(project.ledger, "escalation")  # nor can the evidence pack
    out = cli("run", "Build calc", "--engine", "direct", "--playbook", str(CALC / "playbook.yaml"), "--quiet",
              "--project", str(project.root), env={"ANTHROPIC_API_KEY": ""}, timeout=300)  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error[LEDGER_WRITE_FAILED]: cannot write ") and str(pack) in last
    assert "evidence pack is missing" in last and "graphlemon resume" in last
    [task] = TaskBoard(project.ledger).all().values()
    assert task.status == "blocked_pending_human"  # the block itself was recorded
    _every_line_parses(project.state_dir)
