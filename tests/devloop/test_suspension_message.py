"""The state message of a suspended deployed run: why it waits, in one line of ≤ 500 chars."""

from graphlemon.devloop.escalation_pack import suspension_message
from graphlemon.models import EscalationRecord


def _pack(**kw) -> EscalationRecord:
    return EscalationRecord(task_id="task-1", blocked_reason="retry_limit_exceeded", summary_md="# x", **kw)


def test_happy_the_message_names_reason_note_bugs_and_evidence():
    text = suspension_message(
        "task-1", _pack(open_bug_ids=["b1", "b2"]), "unit snake stayed red\nafter 2 tries", "p-task-1-escalation"
    )
    assert text == ("task-1 blocked: retry_limit_exceeded — unit snake stayed red after 2 tries · 2 open bug(s) · "
                    "evidence: artifact p-task-1-escalation · Resume with a note, or abandon")  # fmt: skip


def test_boundary_a_long_note_is_cut_and_the_message_keeps_its_tail():
    text = suspension_message("task-1", _pack(), "x" * 5000, "k")
    assert len(text) == 500 and "x…" in text and text.endswith("evidence: artifact k · Resume with a note, or abandon")


def test_failure_no_pack_and_no_note_still_says_something_true():
    text = suspension_message("task-1", None, None, "k")
    assert text.startswith("task-1 blocked: blocked — see the evidence · no evidence pack")
