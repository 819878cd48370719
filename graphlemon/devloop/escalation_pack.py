"""The evidence pack that comes with every `blocked_pending_human`: why, rounds so far,
open bugs with hints, the last triage, the agent turns that stopped early (a refusal, replies
without tools, repeated calls, out of calls), budget used, and what a human should decide."""

from __future__ import annotations

from ..agents.budget import suggested_raise
from ..errors import write_failed
from ..lifecycle import ACTIVE_BUG
from ..models import BlockedReason, EscalationRecord, NodeEvent, TimelineEvent, TriageRecord, UsageRecord, utcnow
from ..redact import write_redacted
from ..stages.session import LoopSession
from ..violations import fold
from ..wording import budget_words, markdown_text, next_step, status_words

DECISIONS: dict[str, str] = {
    "budget_exceeded": "Raise the budget above what the task used (the console's **Raise the budget** button, or "
    "`graphlemon budget set TASK --limit N`), then run it again: the button does it at once, on a terminal "
    "`graphlemon resume TASK` (the `Next:` command below does both); or abandon it.",
    "usage_limit_wait_timeout": "The plan's usage limit did not reset in time: check the subscription, then resume.",
    "classifier_blocked": "Claude Code's auto-mode classifier kept denying actions: review the transcript, adjust "
    "permissions or the goal, then resume.",
    "not_converging": "The loop keeps failing the same way: read the open bugs, clarify the spec or fix by hand, "
    "then resume (with a note the coder will see).",
    "retry_limit_exceeded": "A unit stayed red after its retries: look at the hints and decide the fix.",
    "spec_ambiguous": "The SDD does not say what should happen: answer the triager's question in a note and resume.",
    "low_confidence_triage": "The triager is not sure why integration fails: confirm the category and resume.",
    "validator_inconclusive": "The validator's perspectives disagree on the root cause: decide coder / planning / "
    "skill and resume with a note.",
    "skill_defect": "A role's skill (prompt) caused the bug and the proposed change failed its regression gate: "
    "edit the skill (`graphlemon skills update ROLE --bug BUG_ID --file NEW.md`), or decide it is not the skill, "
    "then resume.",
    "plan_inconsistent": "The planner could not produce a consistent plan: clarify the goal and resume.",
    "state_corrupt": "Persisted state is damaged (see the error): repair or remove the named file, then resume.",
    "rollback_failed": "The automatic rollback itself failed: the recovery mechanism needs attention, not the code.",
    "human_requested": "Paused on request: resume when ready.",
    "stopped_by_person": "A person stopped the run at a safe point (the note says who, and what was running): "
    "resume continues from there without redoing finished work, or abandon the task.",
    "stage_failed": "A stage failed with an error it could not retry past (see the note: an unreachable API, a "
    "missing credential, a broken playbook, a bug in GraphLemon): fix the cause, then resume; finished work is kept.",
}


def _budget_line(session: LoopSession) -> str:
    from ..agents.budget import budget_status

    status = budget_status(session.ledger, session.task_id)
    if status is None:
        return "- **Budget limit:** none set"
    return (
        f"- **Budget limit:** {budget_words(status.limit_type, status.limit_value)}, used "
        f"{budget_words(status.limit_type, status.used)}, remaining "
        f"{budget_words(status.limit_type, status.remaining)} (as of {utcnow():%Y-%m-%d %H:%M} UTC, when the task stopped; now: "
        f"`graphlemon budget show {session.task_id}`)"
    )


STOPPED_EVENTS = ("turn_refused", "turn_no_tool_use", "turn_repeated_calls", "coder_out_of_turns")
STOPPED_SHOWN = 20


def stopped_turns(session: LoopSession) -> list[str]:
    """One line per agent turn of the task that ended without an answer, from the timeline (latest last)."""
    events = [e for e in session.ledger.read_as("timeline", TimelineEvent)
              if e.task_id == session.task_id and e.event in STOPPED_EVENTS]  # fmt: skip
    lines = [f"- {e.event}: {e.summary}" for e in events[-STOPPED_SHOWN:]]
    if len(events) > STOPPED_SHOWN:
        lines.insert(0, f"- ({len(events) - STOPPED_SHOWN} earlier ones left out)")
    return lines


def evidence_markdown(session: LoopSession, reason: BlockedReason, note: str) -> tuple[str, list[str]]:
    task = session.board.get(session.task_id)
    bugs = [b for b in session.bugs.list(task_id=session.task_id) if b.status in ACTIVE_BUG]
    usage = [u for u in session.ledger.read_as("usage", UsageRecord) if u.task_id == session.task_id]
    tokens = sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens for u in usage)
    cost = sum(u.cost_usd for u in usage)
    executors = sorted({u.executor for u in usage})
    triage = [t for t in session.ledger.read_as("triage", TriageRecord) if t.task_id == session.task_id]
    # one field per list item (each on its own line however it is rendered); people's and agents' text escaped, so
    # it reads as typed (`<script>`, backticks) and a right-to-left override shows as its code point
    lines = [
        f"# {task.task_id} {status_words('blocked_pending_human', reason)}",
        "",
        f"- **Goal:** {markdown_text(task.goal_text)}",
        f"- **Why:** {markdown_text(note)}",
        f"- **Rounds so far:** {task.loop_round + 1}",
        f"- **Budget used:** {tokens:,} tokens, ${cost:.4f} over {len(usage)} call(s)"
        + (f" (executor: {', '.join(executors)})" if executors else ""),
        _budget_line(session),
        "",
        "## Open bugs",
    ]
    lines += [
        f"- `{b.bug_id}` [{markdown_text(b.unit_id or '-')}] {markdown_text(b.title)}"
        + (f" — root cause {b.root_cause_category}: {markdown_text(b.root_cause_detail)}"
           if b.root_cause_category else "")  # fmt: skip
        for b in bugs
    ] or ["- none"]
    refused = fold(session.ledger.read_as("node", NodeEvent), session.task_id)
    if refused.count:
        lines += ["", f"## Refused actions ({refused.headline()})",
                  "What an agent or a run tried that the sandbox undid or refused (not part of the task's result):"]
        lines += [f"- {markdown_text(text)}" for text in refused.lines()]
    if triage:
        last = triage[-1]
        lines += ["", "## Last triage",
                  f"- {last.category} (confidence {last.confidence:.2f}): {markdown_text(last.root_cause)}"]  # fmt: skip
    stopped = stopped_turns(session)
    if stopped:
        lines += ["", "## Agent turns that stopped early", *stopped]
    if reason == "skill_defect":  # REQ-08: the rejected skill iteration, both versions and the gate's results
        from ..skills.iteration import evidence_section

        lines += evidence_section(session.project.state_dir, session.ledger, session.task_id)
    lines += ["", "## What to decide", DECISIONS.get(reason, "Decide how to continue, then resume.")]
    step = next_step(task.task_id, "blocked_pending_human", reason, session.project.root,
                     raise_to=suggested_raise(session.ledger, task.task_id))  # fmt: skip
    if session.human_step == "prefect_ui":
        lines += ["", f"Next: click **Resume** on this flow run in the Prefect UI (your note reaches the coder), "
                  f"or run `{step.command}`"]  # fmt: skip
    else:
        lines += ["", f"Next: {step.label} in the console (`graphlemon console`), or run `{step.command}`"]
    return "\n".join(lines) + "\n", [b.bug_id for b in bugs]



def write_evidence_pack(session: LoopSession, reason: BlockedReason, note: str) -> EscalationRecord:
    summary, bug_ids = evidence_markdown(session, reason, note)
    record = EscalationRecord(task_id=session.task_id, blocked_reason=reason, summary_md=summary, open_bug_ids=bug_ids)
    session.ledger.append(record)
    path = session.project.state_dir / "escalations" / f"{session.task_id}-{record.ts:%Y%m%dT%H%M%S}.md"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_redacted(path, summary)
    except OSError as exc:
        raise write_failed(path, exc) from None
    return record


def suspension_message(task_id: str, record: EscalationRecord | None, note: str | None, evidence_key: str) -> str:
    """The one line a suspended deployed run shows as its state message: why it waits (the blocked reason and the
    first line of the note), how many bugs are open, and where the evidence is. At most 500 characters."""
    why = " ".join((note or "").split()) or "see the evidence"
    reason = record.blocked_reason if record else "blocked"
    bugs = f"{len(record.open_bug_ids)} open bug(s)" if record else "no evidence pack"
    head = f"{task_id} blocked: {reason} — "
    tail = f" · {bugs} · evidence: artifact {evidence_key} · Resume with a note, or abandon"
    room = 500 - len(head) - len(tail)
    return head + (why if len(why) <= room else why[: max(0, room - 1)] + "…") + tail
