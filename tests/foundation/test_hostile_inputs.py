"""Every command fed hostile input: a clean `error[CODE]: message`, exit 2 for bad input or 1 for a
failed operation, no traceback, and no file of the project changed.

The commands run in-process through `graphlemon.cli.main` (the console script's own entry point), so an uncaught
exception fails the test with its traceback; a few headline cases also run as real processes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.cli import main

NON_UTF8 = b"version: 1\nturns:\n  - name: caf\xe9 \xff\n"

# (id, argv, exit code, error code). Placeholders: {p} project, {bad} a non-UTF-8 file, {pb} a valid playbook,
# {yaml} invalid YAML, {dir} a folder, {task} / {bug} ids that exist, {missing} a path that does not.
# fmt: off
CASES: list[tuple[str, list[str], int, str]] = [
    # init
    ("init-empty-path", ["init", ""], 2, "INVALID_PARAM"),
    ("init-missing-folder", ["init", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("init-a-file", ["init", "{bad}"], 2, "PROJECT_NOT_FOUND"),
    ("init-subfolder-of-repo", ["init", "{p}/sub"], 2, "INVALID_PARAM"),
    # run
    ("run-empty-goal", ["run", "", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-blank-goal", ["run", "  \t", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-unknown-executor", ["run", "g", "--executor", "gpt", "--engine", "direct", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-unknown-engine", ["run", "g", "--engine", "warp", "--playbook", "{pb}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-scripted-no-playbook", ["run", "g", "--executor", "scripted", "--engine", "direct", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("run-playbook-missing", ["run", "g", "--playbook", "{missing}", "--engine", "direct", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("run-playbook-non-utf8", ["run", "g", "--playbook", "{bad}", "--engine", "direct", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("run-playbook-folder", ["run", "g", "--playbook", "{dir}", "--engine", "direct", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("run-playbook-bad-yaml", ["run", "g", "--playbook", "{yaml}", "--engine", "direct", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("run-attempts-0", ["run", "g", "--max-unit-attempts", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-attempts-negative", ["run", "g", "--max-unit-attempts", "-1", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-attempts-text", ["run", "g", "--max-unit-attempts", "many", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-rounds-huge", ["run", "g", "--max-rounds", "9" * 30, "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-budget-tokens-negative", ["run", "g", "--budget-tokens", "-5", "--playbook", "{pb}", "--engine", "direct",
                                    "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-budget-tokens-0", ["run", "g", "--budget-tokens", "0", "--playbook", "{pb}", "--engine", "direct",
                             "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-budget-usd-nan", ["run", "g", "--budget-usd", "nan", "--playbook", "{pb}", "--engine", "direct",
                            "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-budget-usd-inf", ["run", "g", "--budget-usd", "inf", "--playbook", "{pb}", "--engine", "direct",
                            "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-two-budgets", ["run", "g", "--budget-usd", "1", "--budget-tokens", "9", "--playbook", "{pb}",
                         "--engine", "direct", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("run-missing-project", ["run", "g", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    # resume
    ("resume-unknown-task", ["resume", "task-nope", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("resume-empty-id", ["resume", "", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("resume-unknown-engine", ["resume", "{task}", "--engine", "warp", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("resume-playbook-non-utf8", ["resume", "{task}", "--playbook", "{bad}", "--engine", "direct", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    # stop, abandon
    ("stop-unknown-task", ["stop", "task-nope", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("stop-empty-id", ["stop", "", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("stop-timeout-nan", ["stop", "{task}", "--timeout", "nan", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("stop-timeout-negative", ["stop", "{task}", "--timeout", "-1", "-p", "{p}"], 2, "INVALID_PARAM"),
    # text that is not UTF-8 (its bytes kept as surrogates, as Python reads a non-UTF-8 argv): refused, not a traceback
    ("run-goal-not-utf8", ["run", "goal \udcff", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("abandon-note-not-utf8", ["abandon", "{task}", "--note", "\udce9t\udce9", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("stop-missing-project", ["stop", "{task}", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("abandon-unknown-task", ["abandon", "task-nope", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("abandon-timeout-inf", ["abandon", "{task}", "--timeout", "inf", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("abandon-not-a-project", ["abandon", "{task}", "-p", "{dir}"], 2, "PROJECT_NOT_FOUND"),
    # status
    ("status-unknown-task", ["status", "task-nope", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("status-missing-project", ["status", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("status-not-a-project", ["status", "-p", "{dir}"], 2, "PROJECT_NOT_FOUND"),
    # bugs
    ("bugs-list-bad-status", ["bugs", "list", "--status", "[/red]", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("bugs-list-bad-category", ["bugs", "list", "--category", "x", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("bugs-list-bad-source", ["bugs", "list", "--source", "x", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("bugs-show-unknown", ["bugs", "show", "bug-nope", "-p", "{p}"], 2, "BUG_NOT_FOUND"),
    ("bugs-report-empty-title", ["bugs", "report", "--title", " ", "--description", "d", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("bugs-report-empty-description", ["bugs", "report", "--title", "t", "--description", "", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("bugs-report-bad-severity", ["bugs", "report", "--title", "t", "--description", "d", "--severity", "[bold]",
                                  "-p", "{p}"], 2, "INVALID_PARAM"),
    ("bugs-transition-unknown-bug", ["bugs", "transition", "bug-nope", "fixing", "-p", "{p}"], 2, "BUG_NOT_FOUND"),
    ("bugs-transition-bad-status", ["bugs", "transition", "{bug}", "done", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("bugs-transition-not-allowed", ["bugs", "transition", "{bug}", "verified", "-p", "{p}"], 1,
     "INVALID_TRANSITION"),
    # budget
    ("budget-show-unknown", ["budget", "show", "task-nope", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("budget-set-nan", ["budget", "set", "{task}", "--limit", "nan", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("budget-set-inf", ["budget", "set", "{task}", "--limit", "inf", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("budget-set-negative", ["budget", "set", "{task}", "--limit", "-5", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("budget-set-fraction-tokens", ["budget", "set", "{task}", "--limit", "1.5", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("budget-set-bad-type", ["budget", "set", "{task}", "--limit", "5", "--type", "x", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("budget-set-unknown-task", ["budget", "set", "task-nope", "--limit", "5", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    # agent
    ("agent-unknown-role", ["agent", "run", "--role", "chef", "--playbook", "{pb}", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("agent-unknown-executor", ["agent", "run", "--role", "tester", "--executor", "gpt", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("agent-timeout-negative", ["agent", "run", "--role", "tester", "--timeout", "-1", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("agent-timeout-nan", ["agent", "run", "--role", "tester", "--timeout", "nan", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-timeout-zero", ["agent", "run", "--role", "tester", "--timeout", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-timeout-inf", ["agent", "run", "--role", "tester", "--timeout", "inf", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-timeout-huge", ["agent", "run", "--role", "tester", "--timeout", "1e12", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("agent-max-turns-0", ["agent", "run", "--role", "tester", "--max-turns", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-max-turns-huge", ["agent", "run", "--role", "tester", "--max-turns", "100000", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("agent-attempt-0", ["agent", "run", "--role", "tester", "--attempt", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-prompt-file-non-utf8", ["agent", "run", "--role", "tester", "--playbook", "{pb}", "--prompt-file",
                                    "{bad}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-prompt-file-missing", ["agent", "run", "--role", "tester", "--playbook", "{pb}", "--prompt-file",
                                   "{missing}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-prompt-file-folder", ["agent", "run", "--role", "tester", "--playbook", "{pb}", "--prompt-file",
                                  "{dir}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-prompt-and-file", ["agent", "run", "--role", "tester", "--playbook", "{pb}", "--prompt", "x",
                               "--prompt-file", "{pb}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-playbook-non-utf8", ["agent", "run", "--role", "tester", "--executor", "scripted", "--playbook", "{bad}",
                                 "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-playbook-bad-yaml", ["agent", "run", "--role", "tester", "--executor", "scripted", "--playbook",
                                 "{yaml}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-output-model-bad", ["agent", "run", "--role", "tester", "--playbook", "{pb}", "--output-model",
                                "nope", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-output-model-not-model", ["agent", "run", "--role", "tester", "--playbook", "{pb}", "--output-model",
                                      "os:path", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("agent-tools-unknown-role", ["agent", "tools", "--role", "chef"], 2, "INVALID_PARAM"),
    # tester
    ("tester-bad-mode", ["tester", "run", "--unit", "u", "--mode", "x", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("tester-timeout-nan", ["tester", "run", "--unit", "u", "--timeout", "nan", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("tester-timeout-inf", ["tester", "run", "--unit", "u", "--timeout", "inf", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("tester-timeout-zero", ["tester", "run", "--unit", "u", "--timeout", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("tester-attempt-0", ["tester", "run", "--unit", "u", "--attempt", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("tester-unknown-executor", ["tester", "run", "--unit", "u", "--executor", "gpt", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("tester-playbook-non-utf8", ["tester", "run", "--unit", "u", "--playbook", "{bad}", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("tester-unknown-unit", ["tester", "run", "--unit", "nope", "--executor", "none", "-p", "{p}"], 2,
     "UNIT_NOT_FOUND"),
    # test
    ("test-timeout-nan", ["test", "--timeout", "nan", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("test-timeout-negative", ["test", "--timeout", "-1", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("test-timeout-zero", ["test", "--timeout", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("test-unknown-framework", ["test", "--framework", "[/x]", "-p", "{p}"], 2, "UNKNOWN_FRAMEWORK"),
    ("test-missing-project", ["test", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("test-empty-command", ["test", "--command", " ", "-p", "{p}"], 2, "INVALID_PARAM"),
    # triage
    ("triage-unknown-run", ["triage", "--run", "run-nope", "-p", "{p}"], 2, "RUN_NOT_FOUND"),
    ("approve-patch-unknown-run", ["approve-patch", "--run", "run-nope", "-p", "{p}"], 2, "RUN_NOT_FOUND"),
    ("approve-patch-run-escapes", ["approve-patch", "--run", "../../etc", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("triage-run-escapes", ["triage", "--run", "../../../etc", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("triage-unknown-executor", ["triage", "--run", "r", "--executor", "gpt", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("triage-playbook-without-scripted", ["triage", "--run", "r", "--playbook", "{pb}", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    # report
    ("report-bad-since", ["report", "convergence", "--since", "[/bold]", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("report-negative-limit", ["report", "bugs", "--limit", "-1", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("report-unknown-section", ["report", "budget", "--section", "nope", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("report-two-formats", ["report", "convergence", "--json", "--csv", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("report-skills-unknown-section", ["report", "skills", "--section", "[/x]", "-p", "{p}"], 2, "INVALID_PARAM"),
    # sql
    ("sql-reads-a-file", ["sql", "SELECT * FROM read_text('/etc/passwd')", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("sql-writes-a-file", ["sql", "COPY (SELECT 1) TO '{missing}.csv'", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("sql-garbage", ["sql", "SELEC [/bold] FROM", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("sql-no-query", ["sql", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("sql-shell-init-and-query", ["sql", "--shell-init", "SELECT 1", "-p", "{p}"], 2, "INVALID_PARAM"),
    # console (each refused before anything listens)
    ("console-port-zero", ["console", "--port", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("console-port-too-big", ["console", "--port", "70000", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("console-short-token", ["console", "--token", "short", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("console-markup-host", ["console", "--host", "[/bold]", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("console-list-stray-argument", ["console", "list", "[/bold]"], 2, "INVALID_PARAM"),
    ("demo-unknown-engine", ["demo", "--engine", "[red]x[/red]"], 2, "INVALID_PARAM"),
    # gc
    ("gc-not-a-project", ["gc", "--dry-run", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("gc-unknown-option", ["gc", "--all-of-it", "-p", "{p}"], 2, "INVALID_PARAM"),
    # skills
    ("skills-update-unknown-role", ["skills", "update", "[/bold]", "--bug", "b", "--file", "{pb}", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("skills-update-no-bug", ["skills", "update", "coder", "--file", "{pb}", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("skills-rollback-unknown", ["skills", "rollback", "si-[/red]", "-p", "{p}"], 2, "ITERATION_NOT_FOUND"),
    ("skills-show-unknown", ["skills", "show", "../../etc", "-p", "{p}"], 2, "ITERATION_NOT_FOUND"),
    ("skills-log-unknown-role", ["skills", "log", "[/bold]", "-p", "{p}"], 2, "INVALID_PARAM"),
    # serve / deploy (REQ-15)
    ("serve-port-0", ["serve", "--port", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("deploy-bootstrap-unknown-commit", ["deploy", "bootstrap", "[/bold]", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("deploy-stage-unknown-commit", ["deploy", "stage", "no-such-ref", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("deploy-stage-no-live-instance", ["deploy", "stage", "HEAD", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("deploy-stage-negative-threshold", ["deploy", "stage", "HEAD", "--threshold", "-1", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    ("deploy-status-missing-project", ["deploy", "status", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("deploy-rollback-nothing-deployed", ["deploy", "rollback", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("deploy-rollback-unknown-id", ["deploy", "rollback", "dep-[/red]", "-p", "{p}"], 2, "DEPLOYMENT_NOT_FOUND"),
    ("deploy-merged-unknown-task", ["deploy", "merged", "task-[/red]", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("deploy-merged-empty-id", ["deploy", "merged", "", "--no-prefect", "-p", "{p}"], 2, "TASK_NOT_FOUND"),
    ("deploy-merged-missing-project", ["deploy", "merged", "{task}", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("deploy-down-missing-project", ["deploy", "down", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    # server (GraphLemon's local Prefect server: no project; bad settings are in tests/acceptance/test_local_prefect_server.py)
    ("server-status-stray-argument", ["server", "status", "{p}"], 2, "INVALID_PARAM"),
    ("server-start-unknown-option", ["server", "start", "--port", "1"], 2, "INVALID_PARAM"),
    ("server-stop-markup-argument", ["server", "stop", "[red]x[/red]"], 2, "INVALID_PARAM"),
    # doctor
    ("doctor-sandbox-missing-project", ["doctor", "sandbox", "-p", "{missing}"], 2, "PROJECT_NOT_FOUND"),
    ("doctor-sandbox-markup-project", ["doctor", "sandbox", "--json", "-p", "{missing}/[red]x[/red]"], 2,
     "PROJECT_NOT_FOUND"),
    # logs (REQ-13)
    ("logs-unknown-node", ["logs", "show", "ne-[/bold]", "-p", "{p}"], 2, "NODE_EXEC_NOT_FOUND"),
    ("logs-unknown-node-short-form", ["logs", "../../etc/passwd", "-p", "{p}"], 2, "NODE_EXEC_NOT_FOUND"),
    ("logs-negative-tail", ["logs", "show", "ne-x", "--tail", "-1", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("logs-retention-zero", ["logs", "retention", "set", "--days", "0", "-p", "{p}"], 2, "INVALID_PARAM"),
    ("logs-retention-not-a-number", ["logs", "retention", "set", "--days", "[/red]", "-p", "{p}"], 2,
     "INVALID_PARAM"),
    # unknown commands and options
    ("unknown-command", ["frobnicate"], 2, "INVALID_PARAM"),
    ("unknown-option", ["status", "--frob", "-p", "{p}"], 2, "INVALID_PARAM"),
]
# fmt: on


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, str]:
    """A project with a task and a bug (titles that look like markup), and the hostile files."""
    from graphlemon.bugs import BugTracker
    from graphlemon.project import init_project
    from graphlemon.taskboard import TaskBoard

    base = tmp_path_factory.mktemp("hostile")
    repo = base / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "README.md").write_text("# target\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "initial"], cwd=repo, check=True)
    handle = init_project(repo).project
    task = TaskBoard(handle.ledger).create("[/bold] a goal that looks like markup")
    bug = BugTracker(handle.ledger).report(title="[/red] a title that looks like markup", description="[b]")
    files = base / "files"
    files.mkdir()
    (files / "bad.yaml").write_bytes(NON_UTF8)
    (files / "broken.yaml").write_text("turns: [\n  - {{{\n")
    (files / "folder").mkdir()
    shutil.copy(Path(__file__).parents[2] / "examples" / "snake" / "playbook.yaml", files / "pb.yaml")
    shutil.copytree(Path(__file__).parents[2] / "examples" / "snake" / "files", files / "files")
    return {
        "p": str(repo),
        "bad": str(files / "bad.yaml"),
        "yaml": str(files / "broken.yaml"),
        "pb": str(files / "pb.yaml"),
        "dir": str(files / "folder"),
        "missing": str(base / "does-not-exist"),
        "task": task.task_id,
        "bug": bug,
        "base": str(base),
    }


def snapshot(root: Path) -> dict[str, str]:
    """Every file's hash (the analytics cache under .graphlemon/cache/ is derived data and may be built)."""
    return {
        str(f.relative_to(root)): hashlib.sha1(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file() and "__pycache__" not in f.parts and "cache" not in f.relative_to(root).parts[:3]
    }


def error_line(err: str, code: str) -> str:
    """The `error[CODE]: ...` line (a message may go on over more lines, e.g. a YAML or SQL position)."""
    lines = [line for line in err.splitlines() if line.startswith("error[")]
    assert lines and lines[-1].startswith(f"error[{code}]: "), err
    return lines[-1]


def call(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


def _case(name: str, argv: list[str], exit_code: int, error_code: str):
    """`graphlemon run` on Prefect starts its temporary API server in a thread before it reads its input: system."""
    starts = argv[0] == "run" and "--engine" not in argv
    return pytest.param(argv, exit_code, error_code, id=name, marks=[pytest.mark.system] if starts else [])


@pytest.mark.parametrize(("argv", "exit_code", "error_code"), [_case(*c) for c in CASES])
def test_hostile_input_is_a_clean_error_and_changes_nothing(world, capsys, argv, exit_code, error_code):
    args = [a.format(**world) for a in argv]
    before = snapshot(Path(world["base"]))
    code, _out, err = call(args, capsys)
    assert "Traceback" not in err
    error_line(err, error_code)
    assert code == exit_code, err
    assert snapshot(Path(world["base"])) == before, "a refused command changed a file"


def test_the_table_covers_every_command():
    from graphlemon.cli import app

    covered = {tuple(c[1][:2]) if c[1][0] in _GROUPS else (c[1][0],) for c in CASES}
    for command in _commands(app):
        assert command in covered, f"no hostile-input case for `graphlemon {' '.join(command)}`"


_GROUPS = ("bugs", "budget", "agent", "tester", "report", "skills", "deploy", "logs", "doctor", "server", "console")


def _commands(app) -> list[tuple[str, ...]]:
    names = [(c.name or c.callback.__name__.replace("_", "-"),) for c in app.registered_commands]
    for group in app.registered_groups:
        names += [
            (group.name, c.name or c.callback.__name__.rstrip("_")) for c in group.typer_instance.registered_commands
        ]
    return names


# -- the markup class: text from people and agents prints as text, and keeps printing -------------------------


def test_markup_like_goal_and_bug_title_print_as_text(world, capsys):
    for argv in (["status"], ["status", world["task"]], ["bugs", "list"], ["bugs", "show", world["bug"]]):
        code, out, err = call([*argv, "-p", world["p"]], capsys)
        assert code == 0 and "Traceback" not in err, (argv, err)
        assert "[/bold]" in out or "[/red]" in out, (argv, out)


# -- a project that lost its .git, and read-only places ----------------------------------------------------------


def test_run_in_a_project_whose_git_was_removed_says_how_to_repair(tmp_path, capsys):
    from graphlemon.project import init_project

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    init_project(repo)
    shutil.rmtree(repo / ".git")
    before = snapshot(tmp_path)
    code, _out, err = call(["run", "build it", "--engine", "direct", "--executor", "scripted", "-p", str(repo)], capsys)
    assert code == 1 and "Traceback" not in err
    last = error_line(err, "GIT_ERROR")
    assert "no longer a git repository" in last and "graphlemon init" in last
    assert snapshot(tmp_path) == before


def _as_unprivileged(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI as a real process; as root, drop to `nobody` (root may write anything)."""
    cmd = [sys.executable, "-m", "graphlemon", *argv]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot test a permission denial")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_HOME")} | {"HOME": str(cwd)}
    env |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}  # root's repo
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def shared_tmp():
    """A temp folder another user can enter (pytest's tmp_path is private to root)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="graphlemon-perm-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


@pytest.mark.system
def test_init_in_a_read_only_repository_names_the_path(shared_tmp):
    repo = _repo(shared_tmp / "repo")
    out = _as_unprivileged(["init", str(repo)], shared_tmp)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    last = error_line(out.stderr, "PERMISSION_DENIED")
    assert str(repo) in last and "write" in last
    assert not (repo / ".graphlemon").exists()


@pytest.mark.system
def test_run_on_a_read_only_ledger_names_the_file_and_writes_nothing(shared_tmp):
    from graphlemon.project import init_project
    from graphlemon.taskboard import TaskBoard

    repo = _repo(shared_tmp / "repo")
    handle = init_project(repo).project
    TaskBoard(handle.ledger).create("an earlier task")
    for path in [repo, *repo.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # readable by all, writable by root only
    before = snapshot(repo)
    out = _as_unprivileged(["run", "build it", "--engine", "direct", "--executor", "scripted", "--playbook",
                            str(Path(__file__).parents[2] / "examples" / "snake" / "playbook.yaml"), "-p", str(repo)],
                           shared_tmp)  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert ".graphlemon" in error_line(out.stderr, "PERMISSION_DENIED")
    assert snapshot(repo) == before


# -- files GraphLemon reads back that a person, an agent or a crash may have broken -----------------------------

BROKEN_STATE = [
    ("project-json-non-utf8", "project.json", b"\xff\xfe", ["status"], 1, "LEDGER_CORRUPT"),
    ("ledger-line-non-utf8", "bugs.ndjson", b'{"kind":"bug","title":"\xff"}\n', ["bugs", "list"], 1, "LEDGER_CORRUPT"),
    ("units-json-non-utf8", "units.json", b'{"units": [\xff]}', ["tester", "run", "--unit", "u", "--executor", "none"],
     2, "INVALID_PARAM"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "data", "argv", "exit_code", "error_code"), [c[1:] for c in BROKEN_STATE], ids=[c[0] for c in BROKEN_STATE]
)
def test_a_broken_state_file_is_a_clean_error(tmp_path, capsys, name, data, argv, exit_code, error_code):
    from graphlemon.bugs import BugTracker
    from graphlemon.project import init_project

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    handle = init_project(repo).project
    BugTracker(handle.ledger).report(title="a bug", description="d")
    with open(handle.state_dir / name, "ab") as fh:
        fh.write(data)
    before = snapshot(tmp_path)
    code, _out, err = call([*argv, "-p", str(repo)], capsys)
    assert "Traceback" not in err
    assert str(handle.state_dir / name) in error_line(err, error_code)
    assert code == exit_code
    assert snapshot(tmp_path) == before
