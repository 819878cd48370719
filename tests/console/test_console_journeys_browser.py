"""What a person does in the console, start to finish, in real headless Chromium (Debian's `chromium`, Playwright),
with no command line: the console starts every run itself (real `graphlemon run` / `graphlemon resume` processes on
the scripted snake and calc demos). Each test saves screenshots under its tmp dir and tests/.screenshots/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from browser_kit import console_page

from graphlemon.project import init_project, open_project
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
SNAKE = ROOT / "examples" / "snake"
CALC = ROOT / "tests" / "acceptance" / "fixtures" / "calc"
RUN_TIMEOUT_MS = 300_000


@pytest.fixture
def page(browser, request, tmp_path, server):
    yield from console_page(browser, request, tmp_path, server, viewport=(1400, 1000))


def committed_copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "starting code"]):  # fmt: skip
        subprocess.run(["git", *cmd], cwd=dest, check=True)
    return dest


def add_project(page, server, path: Path) -> str:
    page.goto(f"{server.url}/#/")
    page.fill("#project-path", str(path))
    page.click("#add-project button[type=submit]")
    page.wait_for_selector("#project-msg.ok")
    return page.get_attribute(f"#projects tr[data-root='{path}']", "data-project")


@pytest.mark.slow
def test_snake_from_a_budget_block_to_done_from_the_console_alone(page, server, tmp_path):
    repo = committed_copy(SNAKE / "repo", tmp_path / "snake")
    pid = add_project(page, server, repo)
    page.shot("project-added")
    page.goto(f"{server.url}/#/p/{pid}")  # the first open of the project: no task yet, and what to do
    page.wait_for_selector("#dashboard:has-text('No tasks yet')")
    page.shot("first-open")
    page.goto(f"{server.url}/#/p/{pid}/goal")
    page.fill("#goal-text", "Implement a snake game")
    page.fill("#goal-playbook", str(SNAKE / "playbook.yaml"))
    page.select_option("#goal-engine", "direct")
    page.fill("#goal-budget", "12000")
    page.click("#goal-form button[type=submit]")
    page.wait_for_selector("#launch[data-state=ended] #launch-task", timeout=RUN_TIMEOUT_MS)
    page.shot("goal-run-ended")
    page.click("#launch-task")
    page.wait_for_selector("#task-head .pill[data-status=blocked_pending_human]")
    page.wait_for_selector("#actions[data-actions='resume budget abandon'][data-main=budget]")
    assert "needs you: out of budget" in page.inner_text("#task-head")  # words; the name is the pill's tooltip
    assert "budget_exceeded" in page.get_attribute("#task-head .pill", "title")
    assert "secondary" in page.get_attribute("#resume", "class") and page.inner_text("#budget-main") == "Raise the budget"
    page.shot("budget-blocked")
    page.click("#budget-main")  # the main action for a budget block
    page.wait_for_selector("#budget-info .kv")
    page.fill("#budget-limit", "200000")
    page.click("#budget-form button[type=submit]")
    page.wait_for_selector("#budget-msg.ok")
    assert "started graphlemon resume" in page.inner_text("#budget-msg")
    page.shot("budget-raised")
    page.click("#budget-follow")
    page.wait_for_selector("#task-head .pill[data-status=done]", timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector("g.node[data-stage=validator][data-status=done]")
    page.wait_for_selector("#run-state[data-state=none]", state="attached")
    assert page.query_selector("#resume") is None and page.query_selector("#abandon") is None  # nothing to decide
    timeline = page.inner_text("#timeline")
    assert "human action" in timeline and "budget raised to 200,000 tokens" in timeline
    page.shot("done")
    (task,) = TaskBoard(opened(repo).ledger).all().values()
    assert task.status == "done"


def opened(repo: Path):
    return open_project(repo)


def calc_blocked_on_the_validator(tmp_path: Path) -> tuple[Path, Path]:
    """calc whose validator cannot agree on mul's root cause: blocked_pending_human (validator_inconclusive), run
    by the loop itself (`graphlemon run`); the person finds it blocked in the console."""
    repo = committed_copy(CALC / "repo", tmp_path / "calc")
    folder = tmp_path / "playbook"
    shutil.copytree(CALC / "files", folder / "files")
    data = yaml.safe_load((CALC / "playbook.yaml").read_text())
    data["turns"].insert(0, {"match": {"role": "coder", "unit": "mul", "attempt": [1]},  # wrong once
                             "usage": {"input_tokens": 500, "output_tokens": 200},
                             "actions": [{"write_file": {"path": "calc/mul.py", "from_file": "files/code/mul_broken.py"}}],
                             "output": {"summary": "mul", "files": ["calc/mul.py"]}})  # fmt: skip
    validator = next(t for t in data["turns"] if t["match"] == {"role": "validator"})
    v = validator["output"]["verdicts"][0]
    v["spec"]["category"], v["code"]["category"], v["skill"]["category"] = "coder", "planning", "coder"
    playbook = folder / "playbook.yaml"
    playbook.write_text(yaml.safe_dump(data, sort_keys=False))
    init_project(repo)
    subprocess.run([sys.executable, "-m", "graphlemon", "run", "Build calc", "--engine", "direct", "--quiet",
                    "--playbook", str(playbook), "--max-unit-attempts", "1", "--project", str(repo)],
                   capture_output=True, timeout=300)  # fmt: skip
    return repo, playbook


@pytest.mark.slow
def test_manual_resume_of_a_blocked_task_runs_it_to_done_and_the_graph_shows_the_failed_attempt(page, server, tmp_path):
    repo, _ = calc_blocked_on_the_validator(tmp_path)
    (task,) = TaskBoard(opened(repo).ledger).all().values()
    assert task.blocked_reason == "validator_inconclusive"
    pid = add_project(page, server, repo)
    page.goto(f"{server.url}/#/p/{pid}/t/{task.task_id}")
    page.wait_for_selector("#evidence")
    page.wait_for_selector("g.node[data-stage=coder] .fail-mark")  # mul's attempt 1 failed: a red mark
    page.wait_for_selector("#actions[data-main=resume_note]")  # a decision: resume with a note is the main action
    assert page.inner_text("#resume") == "Resume with this note" and "secondary" not in page.get_attribute("#resume", "class")
    assert f"resume {task.task_id} --project" in page.inner_text("#next-command")
    page.shot("blocked")
    page.fill("#resume-note", "mul must multiply; the SDD is right")
    page.click("#resume")
    page.wait_for_selector("#action-msg.ok")
    assert "Started graphlemon resume" in page.inner_text("#action-msg")
    page.wait_for_selector("#task-head .pill[data-status=done]", timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector("#run-state[data-state=none]", state="attached")
    assert "resumed by a person with the note: mul must multiply" in page.inner_text("#timeline")
    page.shot("done")


def test_a_plain_folder_is_refused_a_goal_until_its_first_commit_then_runs_it(page, server, tmp_path):
    plain = tmp_path / "plain-snake"
    shutil.copytree(SNAKE / "repo", plain)  # the starting code, not yet in git
    page.goto(f"{server.url}/#/")
    answers = iter([True, False])  # yes to git init; not yet to the first commit
    page.on("dialog", lambda d: d.accept() if next(answers, True) else d.dismiss())
    page.fill("#project-path", str(plain))
    page.click("#add-project button[type=submit]")
    page.wait_for_selector("#project-msg.ok:has-text('no commit yet')")
    pid = page.get_attribute(f"#projects tr[data-root='{plain}']", "data-project")
    page.goto(f"{server.url}/#/p/{pid}/goal")
    page.fill("#goal-text", "Implement a snake game")
    page.fill("#goal-playbook", str(SNAKE / "playbook.yaml"))
    page.select_option("#goal-engine", "direct")
    page.fill("#goal-budget", "6000")
    page.click("#goal-form button[type=submit]")
    page.wait_for_selector("#goal-msg[data-code=INVALID_PARAM]:has-text('HEAD is unborn')")
    assert not (plain / ".graphlemon" / "tasks.ndjson").exists()  # refused before anything started
    page.shot("refused")
    page.click("#first-commit")  # the dialog: yes
    page.wait_for_selector("#goal-msg.ok:has-text('First commit')")
    page.click("#goal-form button[type=submit]")
    page.wait_for_selector("#launch[data-state=ended] #launch-task", timeout=RUN_TIMEOUT_MS)
    page.shot("ran")
    (task,) = TaskBoard(opened(plain).ledger).all().values()
    assert task.blocked_reason == "budget_exceeded"  # it ran until its 6,000-token budget
