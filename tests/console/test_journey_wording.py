"""Issue 47, the person's journey, checked fast: the words people read (statuses, the next step after every stop, the
budget warning), people's text kept as text (markdown rendered without HTML, diffs numbered, the evidence pack, bidi
overrides), the console's answers to wrong input in the CLI's words, the console's own record for `console list`,
the next free port, the lasting cookie, and the console's views (times, parameters, runs, logs, bugs of no task)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from graphlemon.bugs import BugTracker
from graphlemon.console.app import TOKEN_HEADER, ConsoleSettings, create_app
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.console.rendering import artifact_view, diff_lines, markdown_html
from graphlemon.log_render import render
from graphlemon.taskboard import TaskBoard
from graphlemon.wording import budget_warning, markdown_text, next_step, printable, status_words

TOKEN = "w" * 32
RLO = "\u202e"


@pytest.fixture
def registry(tmp_path: Path) -> ProjectRegistry:
    return ProjectRegistry(tmp_path / "config")


@pytest.fixture
def client(registry, project):
    registry.register(project)
    app = create_app(ConsoleSettings(token=TOKEN, registry=registry))
    with TestClient(app, base_url="http://127.0.0.1:8766", cookies={"graphlemon_console": TOKEN}) as c:
        yield c  # as a browser that opened the printed URL: reads need the token's cookie (docs/console.md)


def post(client, path, body):
    return client.post(path, json=body, headers={TOKEN_HEADER: TOKEN})


def blocked(project, reason: str, goal: str = "Implement a snake game"):
    board = TaskBoard(project.ledger)
    task = board.create(goal)
    board.transition(task.task_id, "planning")
    board.transition(task.task_id, "blocked_pending_human", blocked_reason=reason)
    return task


# -- the next step after every stop: the main action for the reason, and the command as printed -----------------------


@pytest.mark.parametrize(
    ("status", "reason", "run", "action", "label", "in_command"),
    [
        ("blocked_pending_human", "budget_exceeded", None, "budget", "Raise the budget", "budget set T1 --limit N"),
        ("blocked_pending_human", "not_converging", None, "resume_note", "Resume with a note", 'resume T1 --project'),
        ("blocked_pending_human", "stopped_by_person", None, "resume", "Resume", "resume T1 --project"),
        ("blocked_pending_human", "human_requested", None, "resume", "Resume", "resume T1"),
        ("blocked_pending_human", "stage_failed", None, "resume", "Resume", "resume T1"),  # walk5: fix the cause first
        ("paused", None, None, "resume_note", "Resume with a note", "resume T1"),
        ("coding", None, "interrupted", "run", "Run it now", "resume T1"),
        ("queued", None, "idle", "run", "Run it now", "resume T1"),
        ("coding", None, "running", "none", "", "status T1"),
        # a resume took the lease; its run has not written its first event: a run works on it, nothing to decide
        ("blocked_pending_human", "stopped_by_person", "running", "none", "", "status T1"),
        ("blocked_pending_human", "budget_exceeded", "running", "none", "", "status T1"),
        ("paused", None, "stopping", "none", "", "status T1"),
        ("done", None, None, "none", "", "status T1"),
    ],
)
def test_the_next_step_names_the_main_action_for_the_reason(tmp_path, status, reason, run, action, label, in_command):
    step = next_step("T1", status, reason, tmp_path, run, graphlemon="/opt/venv/bin/graphlemon")
    assert (step.action, step.label) == (action, label)
    assert in_command in step.command and step.command.startswith("/opt/venv/bin/graphlemon ")
    assert f"--project {tmp_path.resolve()}" in step.command  # a path that works from any folder
    if action == "resume_note":
        assert "--note" in step.command
    else:
        assert "your note reaches the coder" not in step.why, step.why
    if reason == "stage_failed":
        assert "fix the cause" in step.why, step.why  # as the evidence pack says


def test_a_project_path_with_a_space_is_quoted_in_the_command(tmp_path):
    spaced = tmp_path / "my repo"
    spaced.mkdir()
    step = next_step("T1", "blocked_pending_human", "not_converging", spaced)
    assert f"--project '{spaced}'" in step.command


def test_statuses_in_words():
    assert status_words("blocked_pending_human", "not_converging") == "needs you: not converging"
    assert status_words("blocked_pending_human", "budget_exceeded") == "needs you: out of budget"
    assert status_words("waiting_for_quota") == "waiting for the usage limit to reset"
    assert status_words("some_new_status") == "some new status"  # an unknown name still reads as words


def test_a_limit_below_what_was_used_is_said():
    assert budget_warning("token_count", 5000, 1000, "coding") is None
    said = budget_warning("token_count", 1000, 5000, "coding")
    assert "1,000 tokens" in said and "5,000 tokens" in said and "next model call will block it" in said
    assert "stays blocked" in budget_warning("token_count", 5000, 5000, "blocked_pending_human")


# -- people's text stays text ----------------------------------------------------------------------------------------


def test_bidi_overrides_and_controls_are_shown_as_code_points():
    assert printable(f"abc{RLO}exe.txt") == "abc<U+202E>exe.txt"
    assert printable("a\x1b[31mred\tb\nc") == "a<U+001B>[31mred\tb\nc"
    assert printable("plain text, ünïcode ✓") == "plain text, ünïcode ✓"


def test_markdown_text_keeps_script_tags_backticks_and_fields_on_their_lines():
    from markdown_it import MarkdownIt

    goal = "Add <script>alert(1)</script> and `rm -rf` *here*\n# not a heading " + RLO
    shown = MarkdownIt().render(f"- **Goal:** {markdown_text(goal)}\n- **Why:** x")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "`rm -rf` *here*" in shown
    assert "<h1>" not in shown and "&lt;U+202E&gt;" in shown
    assert shown.count("<li>") == 2  # each field on its own line


def test_markdown_is_rendered_with_tables_and_without_html_or_unsafe_links():
    html = markdown_html(
        "| test | result |\n|---|---|\n| a | <b>x</b> |\n\n<script>alert(1)</script>\n\n"
        "[bad](javascript:alert(1)) [ok](https://example.com/x) ![img](https://example.com/i.png) [rel](foo.md)"
    )
    assert "<table>" in html and "<td>&lt;b&gt;x&lt;/b&gt;</td>" in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html.split("[bad]")[0] and 'href="javascript' not in html
    assert 'href="https://example.com/x"' in html and "<img" not in html and 'href="foo.md"' not in html


def test_a_diff_is_numbered_on_both_sides_and_other_text_is_numbered_plain():
    lines = diff_lines("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -3,3 +3,3 @@\n a\n-b\n+c\n d\n")
    body = [(line.kind, line.old, line.new, line.text) for line in lines if line.kind in ("add", "del", "ctx")]
    assert body == [("ctx", 3, 3, "a"), ("del", 4, None, "b"), ("add", None, 4, "c"), ("ctx", 5, 5, "d")]
    assert [line.kind for line in lines[:4]] == ["file", "meta", "file", "hunk"]
    plain = diff_lines("just\ntext")
    assert [(line.kind, line.old) for line in plain] == [("ctx", 1), ("ctx", 2)]
    assert artifact_view("test_report", ".md", "| a |\n|---|\n| 1 |")["kind"] == "markdown"
    assert artifact_view("code_diff", ".diff", "@@ -1 +1 @@\n-a\n+b")["kind"] == "diff"


def test_log_entries_carry_their_byte_offset():
    first = "2026-01-01T00:00:00Z [node] start\n    detail é\r\n"  # a line with its detail under it, a CRLF end
    text = first + "2026-01-01T00:00:01Z [tests] ünï done\n"
    entries = render(text, 1000)
    assert [e.offset for e in entries] == [1000, 1000 + len(first.encode())]
    assert entries[0].detail == "detail é"
    assert [e.offset for e in render(text)] == [None, None]


# -- the console: wrong input in the CLI's words ----------------------------------------------------------------------


def test_a_relative_project_path_is_refused_not_resolved_against_the_console(client):
    got = post(client, "/api/projects", {"path": "some/relative/dir"})
    assert got.status_code == 400 and got.json()["error"]["code"] == "INVALID_PARAM"
    assert "relative path" in got.json()["error"]["message"]


@pytest.mark.system
def test_a_removed_git_folder_is_said_as_the_cli_says_it(client, project, cli_words):
    import shutil

    shutil.rmtree(project.root / ".git")
    console = post(client, "/api/projects", {"path": str(project.root)}).json()["error"]
    commit = post(client, f"/api/projects/{project.project_id}/first-commit", {}).json()["error"]
    cli = cli_words("init", str(project.root))
    assert console["code"] == commit["code"] == "GIT_ERROR"
    assert "restore its .git folder" in console["message"] and console["message"] in cli
    assert "fatal:" not in console["message"] + commit["message"]


@pytest.mark.system
def test_a_missing_playbook_is_said_as_the_cli_says_it(client, project, cli_words, tmp_path):
    missing = tmp_path / "nope.yaml"
    console = post(client, f"/api/projects/{project.project_id}/goals",
                   {"goal": "x", "executor": "scripted", "playbook": str(missing)}).json()["error"]  # fmt: skip
    cli = cli_words("run", "x", "--executor", "scripted", "--playbook", str(missing), "--engine", "direct",
                    "--project", str(project.root))  # fmt: skip
    assert console["code"] == "INVALID_PARAM" and console["message"] == f"playbook {missing} does not exist"
    assert console["message"] in cli
    relative = post(client, f"/api/projects/{project.project_id}/goals", {"goal": "x", "playbook": "pb.yaml"})
    assert "relative path" in relative.json()["error"]["message"]


def test_unknown_task_and_deployment_are_not_found(client, project):
    pid = project.project_id
    assert client.get(f"/api/projects/{pid}/tasks/task-nope").json()["error"]["code"] == "TASK_NOT_FOUND"
    dep = client.get(f"/api/projects/{pid}/deployments/dep-nope")
    assert dep.status_code == 404 and dep.json()["error"]["code"] == "DEPLOYMENT_NOT_FOUND"


@pytest.fixture
def cli_words(tmp_path, cli):
    def run(*args: str) -> str:
        proc = cli(*args, env={"GRAPHLEMON_CONFIG_DIR": str(tmp_path / "cli-config")})
        assert proc.returncode != 0
        return proc.stderr

    return run


# -- the console's views ----------------------------------------------------------------------------------------------


def test_the_task_view_names_its_next_step_times_parameters_and_words(client, project):
    from graphlemon.models import BudgetConfig
    from graphlemon.stages.session import LoopConfig

    task = blocked(project, "budget_exceeded", goal=f"snake {RLO}gpj.exe")
    LoopConfig.record(project.state_dir, task.task_id, executor="scripted", playbook="/pb.yaml", max_unit_attempts=2)
    project.ledger.append(BudgetConfig(task_id=task.task_id, limit_type="token_count", limit_value=1000, by="test"))
    d = client.get(f"/api/projects/{project.project_id}/tasks/{task.task_id}").json()
    assert d["next"]["action"] == "budget" and d["next"]["label"] == "Raise the budget"
    assert f"--project {project.root}" in d["next"]["command"] and task.task_id in d["next"]["command"]
    assert d["params"]["executor"] == "scripted" and d["params"]["max_unit_attempts"] == 2
    assert d["params"]["engine"] == "direct" and d["params"]["budget"] == {"limit": 1000, "limit_type": "token_count"}
    assert d["times"]["started"] and d["times"]["ended"] and d["times"]["duration_s"] >= 0
    assert d["flow_runs"] == []
    words = client.get("/api/words").json()
    assert words["status"]["blocked_pending_human"] == "needs you" and words["category"]["unknown"] == "not triaged yet"


def test_raising_a_limit_below_what_was_used_is_accepted_and_said(client, project):
    from graphlemon.models import UsageRecord

    task = blocked(project, "not_converging")
    project.ledger.append(UsageRecord(call_id="c1", task_id=task.task_id, role="coder", model="m", executor="scripted",
                                      input_tokens=5000))  # fmt: skip
    got = post(client, f"/api/projects/{project.project_id}/tasks/{task.task_id}/budget", {"limit": 1000})
    assert got.status_code == 200 and "not above what the task already used (5,000 tokens)" in got.json()["warning"]
    above = post(client, f"/api/projects/{project.project_id}/tasks/{task.task_id}/budget", {"limit": 9000})
    assert above.json()["warning"] is None


def test_a_reported_bug_of_no_task_counts_on_the_dashboard(client, project):
    BugTracker(project.ledger).report(title="the snake flickers", description="it flickers", by="console")
    d = client.get(f"/api/projects/{project.project_id}/tasks").json()
    assert d["bugs"] == {"open": 1, "open_without_task": 1}


def test_runs_across_projects_logs_and_artifact_pages(client, project, registry, tmp_path):
    from graphlemon.artifacts import ArtifactStore
    from graphlemon.project import init_project

    other_repo = tmp_path / "other"
    other_repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=other_repo, check=True)
    other = init_project(other_repo).project
    registry.register(other)
    first = blocked(project, "not_converging")
    second = TaskBoard(other.ledger).create("another goal")
    runs = client.get("/api/runs").json()
    assert {(r["project_id"], r["task_id"]) for r in runs["runs"]} == {(project.project_id, first.task_id),
                                                                       (other.project_id, second.task_id)}  # fmt: skip
    assert next(r for r in runs["runs"] if r["task_id"] == first.task_id)["words"] == "needs you: not converging"
    # whether a run holds each task, from its lease as on the task page: a queued task nothing runs is idle
    assert {r["task_id"]: r["run"] for r in runs["runs"]} == {first.task_id: None, second.task_id: "idle"}
    assert client.get(f"/api/projects/{project.project_id}/logs").json() == {"logs": []}
    rec = ArtifactStore(project.ledger).write("code_diff", "@@ -1 +1 @@\n-old\n+new <script>\n", unit_id="u",
                                              task_id=first.task_id)  # fmt: skip
    view = client.get(f"/api/projects/{project.project_id}/artifacts/{rec.artifact_id}/view").json()
    assert view["kind"] == "diff" and view["artifact"]["artifact_id"] == rec.artifact_id
    assert [(x["kind"], x["text"]) for x in view["lines"][1:]] == [("del", "old"), ("add", "new <script>")]
    missing = client.get(f"/api/projects/{project.project_id}/artifacts/art-none/view")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "ARTIFACT_NOT_FOUND"


def test_the_evidence_pack_is_rendered_safely_for_the_page(client, project):
    from graphlemon.models import EscalationRecord

    task = blocked(project, "not_converging")
    project.ledger.append(EscalationRecord(task_id=task.task_id, blocked_reason="not_converging",
                                           summary_md="# x\n\n- **Goal:** <img src=x onerror=alert(1)>\n",
                                           open_bug_ids=[]))  # fmt: skip
    d = client.get(f"/api/projects/{project.project_id}/tasks/{task.task_id}").json()
    assert "<img" not in d["escalation"]["summary_html"] and "&lt;img src=x" in d["escalation"]["summary_html"]


# -- coming back: the cookie lasts, `console list`, the next free port ----------------------------------------------


def test_the_token_cookie_lasts_days_and_is_httponly(client):
    got = client.get(f"/?token={TOKEN}", follow_redirects=False)
    cookie = got.headers["set-cookie"].lower()
    assert got.status_code == 303 and "httponly" in cookie and "samesite=strict" in cookie
    assert "max-age=2592000" in cookie  # 30 days


def test_a_console_record_is_private_and_a_stale_one_is_dropped(tmp_path, monkeypatch):
    from graphlemon.console import running_consoles

    monkeypatch.setenv("GRAPHLEMON_CONFIG_DIR", str(tmp_path / "cfg"))
    path = running_consoles.record("127.0.0.1", 8766, "http://127.0.0.1:8766/?token=secret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    (mine,) = running_consoles.running()
    assert mine.url.endswith("token=secret") and mine.task_url("p 1", "t") == "http://127.0.0.1:8766/#/p/p%201/t/t"
    gone = path.parent / "999999999.json"
    gone.write_text(json.dumps({**json.loads(path.read_text()), "pid": 999999999}))
    assert [c.pid for c in running_consoles.running()] == [os.getpid()] and not gone.exists()


@pytest.mark.system
def test_a_busy_port_moves_to_the_next_free_one_and_says_so():
    from graphlemon.console.server import plan_binding

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        moved = plan_binding("127.0.0.1", busy, None, next_free=True)
        assert moved.asked_port == busy and moved.port > busy
        with pytest.raises(Exception, match="cannot listen"):
            plan_binding("127.0.0.1", busy, None)  # `graphlemon serve` (a deploy instance) never moves


def test_the_run_output_keeps_prefects_own_lines_off_the_terminal():
    """`graphlemon run` prints the timeline, one line per event: Prefect's INFO lines (the timeline it streams to
    the run's logs, `Finished in state Completed()`) and its `Finished in state Red(...)` errors stay in the Prefect
    UI; its other warnings and errors, and the flow's lines marked for the terminal, print."""
    import logging

    from graphlemon.cli.run import _PrefectLines

    def shown(name: str, level: int, msg: str, **extra) -> bool:
        record = logging.LogRecord(name, level, __file__, 1, msg, None, None)
        record.__dict__.update(extra)
        return _PrefectLines().filter(record)

    assert not shown("prefect.task_runs", logging.INFO, "Finished in state Completed()")
    assert not shown("prefect.task_runs", logging.ERROR, "Finished in state Red('1 of 11 failed')")
    assert not shown("prefect.task_runs", logging.ERROR, "Task run failed with state: Red(message='1 of 11 failed')")
    assert not shown("prefect.flow_runs", logging.INFO, "unit_tested [board] 9/9 passed")  # the Follower prints it
    assert shown("prefect.flow_runs", logging.INFO, "task T waits for a goal slot", graphlemon_say=True)
    assert shown("prefect.task_runs", logging.ERROR, "Task run failed with exception: KeyError")
    assert shown("graphlemon.anything", logging.INFO, "not Prefect's")


def test_a_budget_stops_next_command_suggests_a_limit_that_works_as_printed(tmp_path):
    """Twice the larger of the limit and the use, in the budget's unit (`--limit N` failed when pasted)."""
    from graphlemon.agents.budget import suggested_raise, update_budget
    from graphlemon.ledger import Ledger
    from graphlemon.taskboard import TaskBoard

    ledger = Ledger(tmp_path)
    task = TaskBoard(ledger).create("a goal").task_id
    assert suggested_raise(ledger, task) == "--limit N"  # no budget recorded: nothing to compute from
    update_budget(ledger, task, 4000, "token_count")
    assert suggested_raise(ledger, task) == "--limit 8000"
    update_budget(ledger, task, 0.25, "cost_usd")
    assert suggested_raise(ledger, task) == "--limit 0.50 --type cost_usd"


# -- internal names stay out of what people read (the ledger's fields and the error codes keep them) -----------------

INTERNAL = ("blocked_pending_human", "stopped_by_person", "budget_exceeded", "loop_round", "token_count", "goal_text",
            "manual_resume", "REQ-")  # fmt: skip


def said_plainly(text: str) -> None:
    assert not [name for name in INTERNAL if name in text], text


def test_a_stop_its_repeat_the_evidence_pack_and_the_timeline_say_words_not_names(project):
    from graphlemon.devloop.stopping import stop_task
    from graphlemon.models import EscalationRecord, TimelineEvent

    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id  # queued: nothing runs it
    first = stop_task(project, tid, by="a person (graphlemon stop)")
    second = stop_task(project, tid, by="a person (graphlemon stop)")
    assert (first.outcome, second.outcome) == ("stopped", "nothing_to_stop")
    said_plainly(second.message)
    assert "needs you: stopped by a person" in second.message
    (pack,) = [e for e in project.ledger.read_as("escalation", EscalationRecord) if e.task_id == tid]
    assert pack.blocked_reason == "stopped_by_person"  # the record keeps the name
    said_plainly(pack.summary_md.split("## What to decide")[0])  # (the next step below it is a command)
    (row,) = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "escalated"]
    said_plainly(row.summary)
    from graphlemon.devloop.loop import run_devloop
    from graphlemon.errors import GraphLemonError
    from graphlemon.stages.session import LoopSession

    with pytest.raises(GraphLemonError) as running_it:  # a blocked task is resumed first, not run
        run_devloop(LoopSession(project, tid), stages=None)  # type: ignore[arg-type]
    said_plainly(running_it.value.message)


def test_a_budget_refusal_an_empty_goal_and_resume_help_say_words_not_names(project, cli_in_process):
    from graphlemon.agents.budget import preflight
    from graphlemon.errors import BudgetExceeded, GraphLemonError
    from graphlemon.models import BudgetConfig
    from graphlemon.taskboard import check_goal_text

    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    project.ledger.append(BudgetConfig(task_id=tid, limit_type="token_count", limit_value=1000))
    with pytest.raises(BudgetExceeded) as refused:
        preflight(project.ledger, tid, model="scripted", input_tokens=5000, max_output_tokens=1000)
    said_plainly(refused.value.message)
    assert "budget of 1,000 tokens" in refused.value.message and refused.value.context["limit_type"] == "token_count"
    with pytest.raises(GraphLemonError) as empty:
        check_goal_text("  ")
    assert str(empty.value.code) == "INVALID_PARAM" and empty.value.message.startswith("the goal is empty")
    help_text = cli_in_process("resume", "--help").stdout
    said_plainly(help_text.split("Options")[0])


def test_a_resume_note_is_shown_in_the_task_view(project, capsys):
    """walk5: after `resume --note`, the note was stored (decision_resumes) but shown nowhere."""
    from graphlemon.cli._common import console
    from graphlemon.cli.show import show_task

    task = blocked(project, "not_converging")
    TaskBoard(project.ledger).manual_resume(task.task_id, note="the wall is at y >= height")
    TaskBoard(project.ledger).transition(task.task_id, "coding", note="round 1: coding")  # the run's later note
    show_task(project, task.task_id, console(), wide=True)
    assert "your resume note: the wall is at y >= height" in capsys.readouterr().out


def test_the_usage_line_names_the_executor_set_when_no_call_was_recorded(project, capsys):
    """walk5: an anthropic run that never reached the API said "executor: none"."""
    from graphlemon.cli._common import console
    from graphlemon.cli.show import show_task
    from graphlemon.models import TaskSettingsRecord

    task = blocked(project, "stage_failed")
    project.ledger.append(TaskSettingsRecord(task_id=task.task_id, settings={"executor": "anthropic"}))
    show_task(project, task.task_id, console(), wide=True)
    assert "(executor: anthropic (no model call recorded))" in capsys.readouterr().out


def test_an_abandon_prints_its_next_step(project, cli_in_process):
    """walk5: `graphlemon abandon` printed no `next:` line."""
    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    out = cli_in_process("abandon", tid, "--project", str(project.root))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(x.startswith("next: ") and "abandoned" in x for x in lines), out.stdout
    assert any(x.strip().split()[1:3] == ["status", tid] for x in lines if x.startswith("  ")), out.stdout


def test_a_stop_that_does_not_wait_prints_the_next_step_too(project, cli_in_process):
    from graphlemon import lease as leases

    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    with leases.held(project.ledger, tid, leases.Holder.here("graphlemon run")):  # a live run holds the task
        out = cli_in_process("stop", tid, "--no-wait", "--project", str(project.root))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("stop requested: ") and any(x.startswith("next: ") for x in lines), out.stdout
    commands = [x.strip() for x in lines if x.startswith("  ") and f" {tid} --project " in x]
    assert [c.split()[1] for c in commands] == ["status", "resume"], out.stdout  # see it stopped, then resume it
    assert all(str(project.root.resolve()) in c for c in commands)


def test_a_cli_budget_raise_says_nothing_runs_the_task_and_status_names_resume(project, cli_in_process):
    from graphlemon.devloop.escalation_pack import DECISIONS
    from graphlemon.models import BudgetConfig

    task = blocked(project, "budget_exceeded")
    project.ledger.append(BudgetConfig(task_id=task.task_id, limit_type="token_count", limit_value=10))
    where = ("--project", str(project.root))
    raised = cli_in_process("budget", "set", task.task_id, "--limit", "5000", *where)
    assert raised.returncode == 0, raised.stderr
    assert TaskBoard(project.ledger).get(task.task_id).status == "queued"  # and nothing runs it
    assert "nothing runs it" in raised.stdout and f"resume {task.task_id} --project " in raised.stdout, raised.stdout
    shown = cli_in_process("status", task.task_id, *where)
    assert shown.returncode == 0, shown.stderr
    assert "next: nothing runs it" in shown.stdout and f"resume {task.task_id} --project " in shown.stdout
    said_plainly(TaskBoard(project.ledger).get(task.task_id).note)  # "budget raised to 5,000 tokens (used 0 tokens)"
    assert "by itself" not in DECISIONS["budget_exceeded"] and "resume" in DECISIONS["budget_exceeded"]


# -- walk4's words: no internal names, no repeated reason, no cut command ----------------------------------------


def test_timeline_events_and_routes_read_as_words_and_a_command_is_never_cut():
    from graphlemon.wording import event_words, shorten_text, summary_words

    assert [event_words(e) for e in ("coder_claims_unmet", "classifier_reset", "unit_green")] == [
        "claims not met", "classifier counts reset", "unit green"]  # fmt: skip
    assert summary_words("routed", "fast_lane -> round 1 (collision)") == "the coder fixes the units → round 1 (collision)"
    assert summary_words("validated", "round 0: full_replan") == "round 0: the planner plans again"
    assert summary_words("planned", "round 0: fast_lane") == "round 0: fast_lane"  # only where a route is named
    note = "stopped by a person before tester add. Finished work is kept: `graphlemon resume task-20261206-201724-280b " \
           "--project /tmp/some/project` continues from there"  # fmt: skip
    for width in range(20, len(note) + 5):
        cut = shorten_text(note, width)
        assert cut.count("`") % 2 == 0, (width, cut)  # a command whole, or not at all
        assert len(cut) <= max(width, len(note)), (width, cut)


def test_the_task_views_bugs_table_names_a_route_in_words(project, capsys):
    """walk5: `make demo`'s closing bugs table showed `fast_lane` in its route column."""
    from graphlemon.cli._common import console
    from graphlemon.cli.show import show_task

    task = TaskBoard(project.ledger).create("Implement a snake game")
    tracker = BugTracker(project.ledger)
    bug_id, _ = tracker.open(title="wall wraps", source="unit_test", task_id=task.task_id, unit_id="collision")
    tracker.update(bug_id, suggested_route="fast_lane")
    show_task(project, task.task_id, console(), wide=True)
    out = capsys.readouterr().out
    assert "the coder fixes the units" in out and "fast_lane" not in out


def test_a_resume_of_a_task_that_never_met_the_classifier_writes_no_classifier_row(project):
    from graphlemon.agents.automode_denials import EVENT_DENIAL, reset_classifier_counts
    from graphlemon.models import TimelineEvent

    reset_classifier_counts(project.ledger, "task-a", "go on")
    assert not [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.task_id == "task-a"]
    project.ledger.append(TimelineEvent(event=EVENT_DENIAL, task_id="task-b", summary="denied"))
    reset_classifier_counts(project.ledger, "task-b", "go on")  # a task with a denial counted: its counts reset
    assert [e.event for e in project.ledger.read_as("timeline", TimelineEvent) if e.task_id == "task-b"][-1] == \
        "classifier_reset"  # fmt: skip


def test_a_stops_timeline_row_an_ended_tasks_resume_and_the_budget_line_say_it_once_in_words(project, cli_in_process):
    from graphlemon.devloop.stopping import stop_task
    from graphlemon.errors import GraphLemonError
    from graphlemon.models import BudgetConfig, EscalationRecord, TimelineEvent

    board = TaskBoard(project.ledger)
    tid = board.create("Implement a snake game").task_id
    stop_task(project, tid, by="a person (graphlemon stop)")
    (row,) = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "escalated"]
    assert "stopped by a person" in row.summary and row.summary.count("stopped by") == 1, row.summary
    board.transition(tid, "abandoned")
    with pytest.raises(GraphLemonError) as ended:
        board.manual_resume(tid)
    assert "paused" not in ended.value.message and "abandoned" in ended.value.message, ended.value.message
    shown = cli_in_process("status", tid, "--project", str(project.root)).stdout
    assert " · ended " in shown and " · stopped " not in shown, shown
    assert "shortest unique prefix" not in cli_in_process("status", "--help").stdout
    other = board.create("with a budget").task_id
    project.ledger.append(BudgetConfig(task_id=other, limit_type="token_count", limit_value=12000))
    stop_task(project, other, by="a person (graphlemon stop)")
    (pack,) = [e for e in project.ledger.read_as("escalation", EscalationRecord) if e.task_id == other]
    (line,) = [x for x in pack.summary_md.splitlines() if "Budget limit" in x]
    assert "12,000 tokens" in line and "token_count" not in line, line


def test_status_of_an_empty_project_without_a_key_says_what_works_without_one(project, cli_in_process, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    shown = " ".join(cli_in_process("status", "--project", str(project.root)).stdout.split())
    assert "needs a model" in shown and "graphlemon demo" in shown and "--executor scripted" in shown, shown
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    shown = " ".join(cli_in_process("status", "--project", str(project.root)).stdout.split())
    assert 'no tasks yet: `graphlemon run "GOAL"`' in shown and "graphlemon demo" not in shown, shown


def test_a_nodes_time_leaves_out_the_wait_for_a_person_it_was_resumed_after():
    from datetime import UTC, datetime, timedelta

    from graphlemon.console.views import node_times, waiting_spans
    from graphlemon.models import TaskEvent

    t0 = datetime(2026, 12, 6, 19, 0, tzinfo=UTC)
    at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
    moves = [("coding", 0), ("blocked_pending_human", 20), ("coding", 140), ("validating", 150)]
    waits = waiting_spans(TaskEvent(task_id="t", status=st, ts=at(s)) for st, s in moves)
    assert waits == [(at(20), at(140))]
    done = {"started_at": at(5).isoformat(), "updated_at": at(149).isoformat(), "status": "done"}
    assert node_times(done, waits) == {"ended_at": at(149).isoformat(), "duration_s": 24.0, "waited_s": 120.0}
    live = {"started_at": at(5).isoformat(), "updated_at": at(141).isoformat(), "status": "running"}
    assert node_times(live, waits)["waited_s"] == 120.0  # the page subtracts it from the live bar's time
    stopped_now = waiting_spans(TaskEvent(task_id="t", status=st, ts=at(s)) for st, s in moves[:2])
    assert node_times(live, stopped_now)["waited_s"] == 0  # a wait still going on: the bar ends at the stop


def test_a_tasks_time_says_how_much_of_it_was_waiting_for_a_person():
    """"took" alone counted the wait as work (walk6): the wait a person resumed it from is said apart."""
    from datetime import UTC, datetime, timedelta

    from graphlemon.console.views import task_times, waiting_spans
    from graphlemon.models import TaskEvent
    from graphlemon.taskboard import Task

    t0 = datetime(2026, 12, 6, 19, 0, tzinfo=UTC)
    at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
    moves = [("coding", 0), ("blocked_pending_human", 20), ("coding", 140), ("done", 150)]
    waits = waiting_spans(TaskEvent(task_id="t", status=st, ts=at(s)) for st, s in moves)
    task = Task(task_id="t", goal_text="g", status="done", created_at=at(0), updated_at=at(150))
    assert task_times(task, waits) == {"started": at(0).isoformat(), "ended": at(150).isoformat(),
                                       "duration_s": 150.0, "waited_s": 120.0}  # fmt: skip
    blocked = task.model_copy(update={"status": "blocked_pending_human", "updated_at": at(20)})
    assert task_times(blocked, waits[:0])["waited_s"] == 0  # waiting now: its time ends where the wait began


def test_a_task_no_run_holds_says_when_its_last_run_let_go_from_its_lease(client, project):
    """Not the task's last change: a run killed mid-step ends after it (walk6: "not running since" was wrong)."""
    from graphlemon import lease as leases

    board = TaskBoard(project.ledger)
    never, released, gone = (board.create(goal).task_id for goal in ("never run", "released", "killed"))
    for tid in (released, gone):
        board.transition(tid, "planning")
    with leases.held(project.ledger, released, leases.Holder.here("graphlemon run")):
        pass  # released on the way out
    no_such_pid = 4_194_399  # above Linux's largest pid_max: a holder that ended without releasing
    leases.take(project.ledger, gone, leases.Holder.here("graphlemon run", pid=no_such_pid))
    end = next(x for x in leases.history(project.ledger, released)).released
    beat = leases.current(project.ledger, gone).heartbeat
    rows = {r["task_id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert rows[never]["last_run"] is None
    assert rows[released]["last_run"]["how"] == "ended" and rows[released]["last_run"]["at"].startswith(end.isoformat()[:19])
    assert rows[gone]["last_run"]["how"] == "seen" and rows[gone]["last_run"]["at"].startswith(beat.isoformat()[:19])
    page = client.get(f"/api/projects/{project.project_id}/tasks/{gone}").json()
    assert page["run"]["state"] == "interrupted" and page["run"]["last_run"]["how"] == "seen"
