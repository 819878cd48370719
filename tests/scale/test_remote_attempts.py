"""Which run of a remote unit loop the devloop takes in, waits for or starts: a resume (a new attempt) always
starts a fresh run of a unit whose runs failed, and never one of a unit whose run finished or still runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from graphlemon.devloop.remote_attempts import TRIES, RunSeen, first_line, plan, run_tags, why_failed

NODE = "ne-t1-coder-add-r0"
T0 = datetime(2026, 12, 6, tzinfo=UTC)


def _run(n: int, state: str, attempt: str = "L1", message: str = "") -> RunSeen:
    return RunSeen(id=f"r{n}", name=f"unit add · round 0 #{n}", state_type=state, state_name=state.title(),
                   message=message, tags=run_tags(NODE, attempt), created=T0 + timedelta(seconds=n))  # fmt: skip


def test_a_first_start_starts_one_run_keyed_by_its_attempt():
    step = plan([], NODE, "L1")
    assert (step.action, step.key) == ("start", f"graphlemon/{NODE}/L1/1")


def test_a_failed_run_is_followed_by_one_more_then_the_attempt_gives_up():
    step = plan([_run(1, "CRASHED")], NODE, "L1")
    assert (step.action, step.key) == ("start", f"graphlemon/{NODE}/L1/2")
    runs = [_run(n, "FAILED") for n in range(1, TRIES + 1)]
    step = plan(runs, NODE, "L1")
    assert step.action == "give_up" and [r.id for r in step.failed] == [r.id for r in runs]


def test_a_resume_is_a_new_attempt_that_starts_a_fresh_run_after_two_failures():
    runs = [_run(1, "FAILED"), _run(2, "CRASHED")]
    step = plan(runs, NODE, "L2")
    assert (step.action, step.key, step.failed) == ("start", f"graphlemon/{NODE}/L2/1", [])


def test_a_finished_run_of_any_attempt_is_taken_in_and_a_running_one_waited_for():
    assert plan([_run(1, "FAILED"), _run(2, "COMPLETED")], NODE, "L9").run.id == "r2"
    assert (plan([_run(1, "FAILED"), _run(2, "RUNNING")], NODE, "L9").action, "r2") == ("wait", "r2")
    assert plan([_run(1, "PENDING", "L1")], NODE, "L2").action == "wait"


def test_a_completed_run_whose_result_is_lost_counts_as_failed():
    step = plan([_run(1, "COMPLETED")], NODE, "L1", unreadable={"r1"})
    assert (step.action, step.key) == ("start", f"graphlemon/{NODE}/L1/2")


def test_the_first_line_of_a_child_runs_error_reaches_the_words():
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1\nTypeError: extractall() got an unexpected keyword'
    assert first_line(tb) == "TypeError: extractall() got an unexpected keyword"
    assert first_line("Flow run encountered an exception: KeyError: 'x'\nmore") == (
        "Flow run encountered an exception: KeyError: 'x'"
    )
    said = why_failed(_run(1, "CRASHED", message="Process exited with status code: 1"), "No module named 'git'")
    assert said == "flow run unit add · round 0 #1 (r1) ended Crashed: No module named 'git'"


def test_a_logged_error_with_a_traceback_is_quoted_with_the_exception_it_ends_with():
    logged = (
        "Unexpected exception encountered when trying to load flow\n"
        "Traceback (most recent call last):\n"
        '  File "/x/engine.py", line 9, in <module>\n'
        "    import git\n"
        "ModuleNotFoundError: No module named 'gitdb'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/x/worktrees.py", line 26, in <module>\n'
        "    from git import Repo\n"
        "    ^^^^^^^^^^^^^^^^^^^^\n"
        "ModuleNotFoundError: No module named 'git'\n"
    )
    assert first_line(logged) == (
        "Unexpected exception encountered when trying to load flow: ModuleNotFoundError: No module named 'git'"
    )
    assert first_line("Process exited with status code: 1. Process exited with a general error.") == (
        "Process exited with status code: 1. Process exited with a general error."
    )
