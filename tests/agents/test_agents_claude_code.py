"""T2: the claude_code backend driving a fake `claude` executable that emits stream-json."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from fakes.claude import crash, denials, hang, session_limit, success, usage_limit
from pydantic import BaseModel

from graphlemon.agents import Limits, build_executor
from graphlemon.agents.automode_denials import classifier_counts, reset_classifier_counts
from graphlemon.errors import BudgetExceeded, ClassifierBlocked, ErrorCode, GraphLemonError, QuotaExceeded
from graphlemon.models import BudgetConfig, NodeEvent, TimelineEvent, UsageRecord


class Verdict(BaseModel):
    ok: bool


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.mark.system
def test_a_successful_turn_parses_events_output_and_usage(project, fake_claude, claude_settings, turn):
    usage = {
        "input_tokens": 100,
        "output_tokens": 40,
        "cache_read_input_tokens": 2000,
        "cache_creation_input_tokens": 500,
    }
    fake_claude.queue(
        success(
            structured_output={"ok": True},
            writes={"tests/test_a.py": "def test_a(): pass\n"},
            texts=["Looking."],
            usage=usage,
        )
    )
    result = turn(
        build_executor("claude_code", settings=claude_settings),
        "tester",
        unit_id="u1",
        run_id="r1",
        task_id="t1",
        output_model=Verdict,
    )

    assert result.ok and result.output == {"ok": True} and result.executor == "claude_code"
    assert result.files_changed == ["tests/test_a.py"] and result.reverted_paths == []
    records = project.ledger.read_as("usage", UsageRecord)
    assert len(records) == 2  # one per model call: the text and the Write tool_use
    assert all(
        (r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens) == (100, 40, 2000, 500)
        for r in records
    )
    assert all(r.executor == "claude_code" and r.task_id == "t1" and r.model == "claude-sonnet-5-5" for r in records)

    [call] = fake_claude.calls
    argv = call["argv"]
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--model"] and "--bare" not in argv
    assert call["cwd"] == str(project.root) and call["stdin"].endswith("# CONTEXT\n\ndo the work")
    assert call["stdin"].startswith("# THIS TURN") and "unit `u1`" in call["stdin"]
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert "Write(tests/**)" in allowed and "Write" not in allowed
    assert json.loads(argv[argv.index("--json-schema") + 1])["required"] == ["ok"]
    assert "Tester agent" in argv[argv.index("--append-system-prompt") + 1]
    assert argv[argv.index("--max-turns") + 1] == "40"  # the tester's turn limit


@pytest.mark.system
def test_changes_outside_the_sandbox_are_detected_from_the_diff_and_reverted(
    project, fake_claude, claude_settings, turn
):
    root = project.root
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("ORIGINAL\n")
    (root / "notes.txt").write_text("tracked\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "code")
    (root / "notes.txt").write_text("dirty before the turn\n")  # a human's uncommitted change survives
    fake_claude.queue(
        success(
            writes={
                "tests/test_ok.py": "ok\n",
                "src/app.py": "PWNED\n",
                "src/new_module.py": "x\n",
                "notes.txt": "overwritten\n",
            },
            deletes=["README.md"],
        )
    )
    result = turn(build_executor("claude_code", settings=claude_settings), "tester", node_exec_id="ne-cc")
    assert result.ok
    assert result.files_changed == ["tests/test_ok.py"]
    assert result.reverted_paths == ["README.md", "notes.txt", "src/app.py", "src/new_module.py"]
    assert (root / "src/app.py").read_text() == "ORIGINAL\n"
    assert not (root / "src/new_module.py").exists()
    assert (root / "README.md").read_text() == "# target\n"
    assert (root / "notes.txt").read_text() == "dirty before the turn\n"
    assert (root / "tests/test_ok.py").exists()
    violations = [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert sorted(v.error.split("'")[1] for v in violations) == result.reverted_paths
    assert {e.code for e in result.tool_errors} == {"SANDBOX_VIOLATION"}


@pytest.mark.system
@pytest.mark.parametrize(
    "behaviour, limit_type, resets",
    [
        (session_limit("You've hit your session limit · resets 3pm (UTC)"), "session", True),
        (usage_limit("weekly"), "weekly", True),
        (usage_limit("opus", resets_at=1_900_000_000), "opus", True),
        (usage_limit("session", text="Claude AI usage limit reached|1760004000"), "session", True),
    ],
)
def test_usage_limit_messages_become_quota_exceeded(
    project, fake_claude, claude_settings, turn, behaviour, limit_type, resets
):
    fake_claude.queue(behaviour)
    with pytest.raises(QuotaExceeded) as err:
        turn(build_executor("claude_code", settings=claude_settings), "coder")
    assert err.value.code == ErrorCode.QUOTA_EXCEEDED and err.value.limit_type == limit_type
    assert (err.value.resets_at is not None) is resets
    if behaviour["steps"][0]["limit"]["resets_at"]:
        assert err.value.resets_at.timestamp() == 1_900_000_000


@pytest.mark.system
def test_a_limit_message_only_in_the_result_text_is_recognised(project, fake_claude, claude_settings, turn):
    fake_claude.queue(
        {
            "steps": [
                {"result": {"result": "You've hit your weekly limit · resets Jul 31, 2am (UTC)", "is_error": True}}
            ],
            "exit_code": 1,
        }
    )
    with pytest.raises(QuotaExceeded) as err:
        turn(build_executor("claude_code", settings=claude_settings), "coder")
    assert err.value.limit_type == "weekly" and (err.value.resets_at.month, err.value.resets_at.day) == (7, 31)


@pytest.mark.system
def test_three_classifier_denials_in_a_row_block_the_task(project, fake_claude, claude_settings, turn):
    fake_claude.queue(denials(3))
    with pytest.raises(ClassifierBlocked) as err:
        turn(build_executor("claude_code", settings=claude_settings), "coder", task_id="task-k")
    assert err.value.code == ErrorCode.CLASSIFIER_BLOCKED and err.value.context["consecutive"] == 3
    assert classifier_counts(project.ledger, "task-k") == (3, 3)
    events = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "classifier_denial"]
    assert len(events) == 3 and "Irreversible Local Destruction" in events[0].summary


@pytest.mark.system
def test_denials_separated_by_allowed_actions_do_not_block_but_count_in_total(
    project, fake_claude, claude_settings, turn
):
    executor = build_executor("claude_code", settings=claude_settings.model_copy(update={"classifier_max_total": 5}))
    fake_claude.queue(denials(2, then_allowed=1), denials(2, then_allowed=1))
    assert turn(executor, "coder", task_id="task-m").ok
    assert classifier_counts(project.ledger, "task-m") == (0, 2)
    assert turn(executor, "coder", task_id="task-m").ok
    assert classifier_counts(project.ledger, "task-m") == (0, 4)
    fake_claude.queue(denials(1))  # the 5th denial of the task reaches the total limit
    with pytest.raises(ClassifierBlocked, match="5 in total"):
        turn(executor, "coder", task_id="task-m")


@pytest.mark.system
def test_classifier_counts_survive_a_restart(project, fake_claude, claude_settings, cli):
    fake_claude.queue(denials(2, finish=True))
    args = [
        "agent",
        "run",
        "--role",
        "coder",
        "--executor",
        "claude_code",
        "--task",
        "task-r",
        "--project",
        str(project.root),
        "--json",
    ]
    env = {**fake_claude.env(), "GRAPHLEMON_CLAUDE_BIN": "claude"}
    first = cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    fake_claude.queue(denials(1))
    second = cli(*args, env=env)  # a new process: the two earlier denials still count
    assert second.returncode == 1 and "error[CLASSIFIER_BLOCKED]" in second.stderr
    third = cli(*args, env=env)
    assert third.returncode == 1 and "error[CLASSIFIER_BLOCKED]" in third.stderr
    assert len(fake_claude.calls) == 2  # blocked before claude was even started
    reset_classifier_counts(project.ledger, "task-r", note="resumed by a person")
    assert classifier_counts(project.ledger, "task-r") == (0, 0)
    fake_claude.queue(success())
    assert cli(*args, env=env).returncode == 0


@pytest.mark.system
def test_a_crash_is_an_executor_error_with_stderr(project, fake_claude, claude_settings, turn):
    fake_claude.queue(crash(2, "Error: Invalid API key · Please run /login"))
    with pytest.raises(GraphLemonError) as err:
        turn(build_executor("claude_code", settings=claude_settings), "coder")
    assert (
        err.value.code == ErrorCode.EXECUTOR_ERROR
        and "exited with code 2" in err.value.message
        and "/login" in err.value.message
    )
    missing = claude_settings.model_copy(update={"claude_bin": "/nonexistent/claude"})
    with pytest.raises(GraphLemonError, match="cannot start"):
        turn(build_executor("claude_code", settings=missing), "coder")


@pytest.mark.system
def test_a_hanging_claude_is_killed_at_the_turn_timeout(project, fake_claude, claude_settings, turn):
    fake_claude.queue(hang(30))
    started = time.monotonic()
    result = turn(build_executor("claude_code", settings=claude_settings), "coder", limits=Limits(timeout_s=1.0))
    assert result.stop_reason == "timeout" and time.monotonic() - started < 10


@pytest.mark.system
def test_max_turns_garbage_lines_and_text_results(project, fake_claude, claude_settings, turn):
    executor = build_executor("claude_code", settings=claude_settings)
    fake_claude.queue(
        {
            "steps": [
                {"raw": "not json at all"},
                {"result": {"subtype": "error_max_turns", "is_error": True, "result": ""}},
            ]
        }
    )
    assert turn(executor, "coder").stop_reason == "max_turns"
    fake_claude.queue(success(result='All done.\n```json\n{"ok": false}\n```'))
    assert turn(executor, "coder", output_model=Verdict).output == {"ok": False}
    fake_claude.queue(success(result="no json here"))
    assert turn(executor, "coder").output == {"text": "no json here"}
    fake_claude.queue(success(result="no json here"))
    assert turn(executor, "coder", output_model=Verdict).stop_reason == "output_invalid"


@pytest.mark.system
def test_budget_preflight_and_token_budget_stop(project, fake_claude, claude_settings, turn):
    executor = build_executor("claude_code", settings=claude_settings)
    project.ledger.append(BudgetConfig(task_id="task-x", limit_type="token_count", limit_value=50))
    with pytest.raises(BudgetExceeded):
        turn(executor, "coder", task_id="task-x")
    assert fake_claude.calls == []  # never started
    project.ledger.append(BudgetConfig(task_id="task-y", limit_type="token_count", limit_value=6000))
    fake_claude.queue(success(texts=["a", "b", "c", "d", "e"], usage={"input_tokens": 1000, "output_tokens": 500}))
    with pytest.raises(BudgetExceeded, match="crossed the token budget"):
        turn(executor, "coder", task_id="task-y")
    project.ledger.append(BudgetConfig(task_id="task-z", limit_type="cost_usd", limit_value=2.5))
    fake_claude.queue(success())
    turn(executor, "coder", task_id="task-z")
    argv = fake_claude.calls[-1]["argv"]
    assert argv[argv.index("--max-budget-usd") + 1] == "2.5000"


@pytest.mark.system
def test_claude_code_needs_a_git_work_tree(project, claude_settings, turn):
    shutil.rmtree(project.root / ".git")
    with pytest.raises(GraphLemonError, match="not a git work tree"):
        turn(build_executor("claude_code", settings=claude_settings), "coder")


# -- REQ-14 probe, TodoWrite, behaviour matching ---------------------------------------------------


@pytest.mark.system
def test_the_quota_probe_is_a_minimal_claude_run_false_while_the_limit_holds(project, fake_claude, claude_settings):
    from fakes.claude import when

    from graphlemon.agents.claude_code import PROBE_PROMPT

    fake_claude.queue(
        when(usage_limit("weekly"), stdin=PROBE_PROMPT),
        when(crash(), stdin=PROBE_PROMPT),
        when(success(result="ok"), stdin=PROBE_PROMPT),
    )
    executor = build_executor("claude_code", settings=claude_settings)
    assert [executor.probe("claude-sonnet-4-5") for _ in range(3)] == [False, False, True]
    for call in fake_claude.calls:
        argv = call["argv"]
        assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5" and argv[argv.index("--max-turns") + 1] == "1"
        assert call["cwd"] != str(project.root) and "--bare" not in argv  # an empty temp folder, a normal start
    assert project.ledger.read("usage") == []  # probes are not task turns


@pytest.mark.system
def test_a_probe_that_cannot_start_claude_is_an_executor_error(claude_settings, tmp_path):
    executor = build_executor(
        "claude_code", settings=claude_settings.model_copy(update={"claude_bin": str(tmp_path / "x")})
    )
    with pytest.raises(GraphLemonError) as info:
        executor.probe("claude-sonnet-4-5")
    assert info.value.code == ErrorCode.EXECUTOR_ERROR


@pytest.mark.system
def test_todowrite_becomes_the_roles_todo_list(project, fake_claude, claude_settings, turn):
    todos = [
        {"content": "tests for AC1", "status": "completed", "activeForm": "Writing tests for AC1"},
        {"content": "tests for AC2", "status": "in_progress", "activeForm": "Writing tests for AC2"},
        {"content": "", "status": "weird", "activeForm": "Checking"},
    ]
    fake_claude.queue(success(structured_output={"ok": True}, todos=todos))
    result = turn(build_executor("claude_code", settings=claude_settings), "tester", unit_id="u1", task_id="t1",
                  node_exec_id="ne-t1-tester-u1", output_model=Verdict)  # fmt: skip
    assert result.ok
    saved = json.loads((project.state_dir / "agent-state" / "ne-t1-tester-u1" / "tester-todo.json").read_text())
    assert [(i["title"], i["status"]) for i in saved] == [
        ("tests for AC1", "done"),
        ("tests for AC2", "in_progress"),
        ("Checking", "pending"),
    ]
    argv = fake_claude.calls[0]["argv"]
    assert "TodoWrite" in argv[argv.index("--allowedTools") + 1].split(",")


@pytest.mark.system
def test_the_fake_gives_each_call_the_first_behaviour_that_fits(project, fake_claude, claude_settings, turn):
    from fakes.claude import when

    fake_claude.queue(
        when(success(structured_output={"ok": False}), system="You are the Coder agent"),
        when(success(structured_output={"ok": True}), system="You are the Tester agent", stdin="unit `u2`"),
        success(structured_output={"ok": False}),
    )
    executor = build_executor("claude_code", settings=claude_settings)
    result = turn(executor, "tester", unit_id="u2", output_model=Verdict)
    assert result.output == {"ok": True} and fake_claude.pending == 2
    assert turn(executor, "tester", unit_id="u3", output_model=Verdict).output == {"ok": False}  # the catch-all
    assert fake_claude.pending == 1
