"""The words people read: a task's status in plain words, what to do after every stop (the command, with the task
id and a project path that works, and the console's button), and people's text made safe to print.

The CLI, the console and the evidence pack take their wording from here, so the terminal and the page say the same
thing. Internal names (`blocked_pending_human`, `manual_resume`) stay in `--json`, the ledger and tooltips.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

STATUS_WORDS: dict[str, str] = {
    "created": "created",
    "queued": "queued",
    "planning": "planning",
    "coding": "coding",
    "integrating": "integrating",
    "validating": "validating",
    "waiting_for_quota": "waiting for the usage limit to reset",
    "paused": "paused",
    "blocked_pending_human": "needs you",
    "done": "done",
    "abandoned": "abandoned",
}
REASON_WORDS: dict[str, str] = {
    "budget_exceeded": "out of budget",
    "usage_limit_wait_timeout": "the usage limit did not reset in time",
    "classifier_blocked": "Claude Code's classifier kept denying actions",
    "not_converging": "not converging",
    "retry_limit_exceeded": "a unit stayed red after its retries",
    "spec_ambiguous": "the spec is ambiguous",
    "low_confidence_triage": "the triager is not sure",
    "validator_inconclusive": "the validator could not decide",
    "skill_defect": "a skill change failed its gate",
    "plan_inconsistent": "the plan is inconsistent",
    "state_corrupt": "saved state is damaged",
    "rollback_failed": "a rollback failed",
    "human_requested": "paused on request",
    "stage_failed": "a stage failed",
    "stopped_by_person": "stopped by a person",
}
NODE_WORDS: dict[str, str] = {"waiting_for_quota": "waiting for quota", "sent_back": "sent back", "pending": "pending",
                              "stopped": "stopped (no run)", "cancelled": "cancelled (task ended)"}
# a bug the tester opened keeps the category `unknown` in the ledger until the BugTriager or the validator decides
# (the Tester's spec: it does not guess); people read what that means
CATEGORY_WORDS: dict[str, str] = {"unknown": "not triaged yet"}
# timeline events and the validator's routes as people read them (the ledger keeps the names; tooltips show them)
EVENT_WORDS: dict[str, str] = {
    "classifier_denial": "classifier denied",
    "classifier_reset": "classifier counts reset",
    "coder_claims_unmet": "claims not met",
    "coder_out_of_turns": "coder out of turns",
    "test_failed": "tests failed",
    "test_passed": "tests passed",
    "escalated": "needs you",
    "quota_wait": "waiting for quota",
    "quota_wait_timeout": "quota wait ended",
}
ROUTE_WORDS: dict[str, str] = {
    "fast_lane": "the coder fixes the units",
    "full_replan": "the planner plans again",
    "skill_update": "a skill is updated",
    "escalate": "a person decides",
    "skill_defect": "a skill defect",
}
_ROUTED_EVENTS = frozenset({"routed", "validated"})  # their summaries name a route: "fast_lane -> round 1 (mul)"
BUDGET_REASONS = frozenset({"budget_exceeded"})
STOPPED_REASONS = frozenset({"stopped_by_person", "human_requested"})
FIX_FIRST_REASONS = frozenset({"stage_failed", "state_corrupt", "rollback_failed"})  # a cause outside the loop

Action = Literal["budget", "resume_note", "resume", "run", "none"]


def status_words(status: str, reason: str | None = None) -> str:
    """`blocked_pending_human` + `not_converging` -> "needs you: not converging"."""
    words = STATUS_WORDS.get(status, status.replace("_", " "))
    if reason:
        words += f": {REASON_WORDS.get(reason, reason.replace('_', ' '))}"
    return words


def event_words(event: str) -> str:
    """`coder_claims_unmet` -> "claims not met" (any other name: its underscores as spaces)."""
    return EVENT_WORDS.get(event, event.replace("_", " "))


def summary_words(event: str, summary: str) -> str:
    """A timeline summary as people read it: a route's name in words (`fast_lane -> round 1 (mul)` -> "the coder
    fixes the units → round 1 (mul)"), the rest as written (old ledgers read the same)."""
    if event not in _ROUTED_EVENTS:
        return summary
    return " ".join(_route_word(w) for w in summary.split(" "))


def route_words(route: str) -> str:
    """A bug's suggested route as people read it: `fast_lane` -> "the coder fixes the units" (any other name: its
    underscores as spaces)."""
    return ROUTE_WORDS.get(route, route.replace("_", " "))


def _route_word(word: str) -> str:
    name = word.rstrip(":")
    if name in ROUTE_WORDS:
        return route_words(name) + word[len(name) :]
    return "→" if word == "->" else word


def shorten_text(text: str, width: int, placeholder: str = " …") -> str:
    """`text` on one line, at most about `width` characters, cut between words and never inside a `code span` (a
    command is given whole or not at all: the text ends before it)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    kept = ""
    for i, part in enumerate(flat.split("`")):
        piece = f"`{part}`" if i % 2 else part
        if len(kept) + len(piece) <= width - len(placeholder):
            kept += piece
            continue
        if i % 2 == 0:  # prose: as many whole words as fit
            room = width - len(placeholder) - len(kept)
            kept += piece[:room].rsplit(" ", 1)[0] if room > 0 and " " in piece[:room + 1] else ""
        break
    return kept.rstrip() + placeholder


class NextStep(BaseModel):
    """What to do now: `action` names the console's main button, `label` its words, `command` the same on a
    terminal (copied as printed: full task id, absolute project path), `why` one sentence."""

    action: Action
    label: str
    command: str
    why: str


def project_arg(root: Path | str) -> str:
    return f"--project {shlex.quote(str(Path(root).resolve()))}"


def next_step(task_id: str, status: str, reason: str | None, root: Path | str, run_state: str | None = None,
              graphlemon: str = "graphlemon", raise_to: str = "--limit N") -> NextStep:  # fmt: skip
    """The one next step after a stop, from the task's status, its blocked reason and whether anything runs it
    (`run_state`, from the task's lease: a live holder comes first — a resume that took the lease runs the task
    before its first event changes the status).
    `graphlemon`: how to call the command (a full path where `graphlemon` may not be on PATH); `raise_to`: the
    budget options a budget stop's command suggests (`budget.suggested_raise`: a limit that works as printed)."""
    where = project_arg(root)
    resume = f"{graphlemon} resume {task_id} {where}"
    if run_state == "stopping":
        return NextStep(action="none", label="", command=f"{graphlemon} status {task_id} {where}",
                        why="a person asked its run to stop: it stops at its next safe point, its work kept")  # fmt: skip
    if run_state == "running":  # a live holder of its lease: a resume took it, whatever status the run has not yet set
        return NextStep(action="none", label="", command=f"{graphlemon} status {task_id} {where}",
                        why="a run is working on it")  # fmt: skip
    if status == "blocked_pending_human" and reason in BUDGET_REASONS:
        return NextStep(
            action="budget",
            label="Raise the budget",
            command=f"{graphlemon} budget set {task_id} {raise_to} {where} && {resume}",
            why="the task used its budget: raise the limit above what it used, and it carries on",
        )
    if status == "blocked_pending_human" and reason in STOPPED_REASONS | FIX_FIRST_REASONS:
        why = ("a person stopped the task: resume it to carry on where it stopped" if reason in STOPPED_REASONS else
               "it stopped on an error, not on the code: fix the cause the note names, then resume; finished work is kept")
        return NextStep(action="resume", label="Resume", command=resume, why=why)
    if status in ("blocked_pending_human", "paused"):
        return NextStep(action="resume_note", label="Resume with a note",
                        command=f'{resume} --note "what to do differently"',
                        why="the loop needs a decision: your note reaches the coder")  # fmt: skip
    if run_state in ("idle", "interrupted"):
        why = "its run stopped before the task ended" if run_state == "interrupted" else "nothing runs it"
        return NextStep(action="run", label="Run it now", command=resume, why=f"{why}: run it to continue")
    if status == "done":
        return NextStep(action="none", label="", command=f"{graphlemon} status {task_id} {where}",
                        why="the task is done; its work is merged into your branch")  # fmt: skip
    if status == "abandoned":
        return NextStep(action="none", label="", command=f"{graphlemon} status {task_id} {where}",
                        why="the task was abandoned")  # fmt: skip
    return NextStep(action="none", label="", command=f"{graphlemon} status {task_id} {where}",
                    why="a run is working on it")  # fmt: skip


def budget_words(limit_type: str, value: float) -> str:
    return f"{value:,.0f} tokens" if limit_type == "token_count" else f"${value:,.4f}"


def budget_warning(limit_type: str, limit: float, used: float, task_status: str) -> str | None:
    """Said when a limit is set at or below what the task already used (accepted: a person may mean to stop it)."""
    if limit > used:
        return None
    what = (
        f"the new limit, {budget_words(limit_type, limit)}, is not above what the task already used "
        f"({budget_words(limit_type, used)})"
    )
    if task_status == "blocked_pending_human":
        return f"{what}: the task stays blocked; set a limit above {budget_words(limit_type, used)} to let it go on"
    if task_status in ("done", "abandoned"):
        return f"{what} (the task has ended: nothing changes)"
    return f"{what}: its next model call will block it ({REASON_WORDS['budget_exceeded']})"


def duration_words(seconds: float) -> str:
    """12 s, 3 min 05 s, 2 h 04 min."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


# -- people's text, printable ---------------------------------------------------------------------------------------
# bidirectional overrides and isolates reorder what follows them on screen (a goal could show as something it is
# not); C0/C1 controls move the cursor or colour the terminal. Each is shown as its code point instead.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _visible(ch: str) -> str:
    code = ord(ch)
    if ch in _BIDI or (code < 0x20 and ch not in "\n\t") or 0x7F <= code < 0xA0:
        return f"<U+{code:04X}>"
    return ch


def printable(text: str | None) -> str:
    """People's and agents' text with bidi and control characters shown as `<U+202E>` (newlines and tabs kept)."""
    if not text:
        return text or ""
    if all(ch not in _BIDI and (" " <= ch < "\x7f" or ch in "\n\t" or ord(ch) >= 0xA0) for ch in text):
        return text
    return "".join(_visible(ch) for ch in text)


def markdown_text(text: str | None) -> str:
    """People's text inside a markdown document, kept as text: every markdown and HTML character escaped, on one line
    (so `<script>` and backticks read as typed, and a newline cannot start a heading)."""
    out = []
    for ch in printable(" ".join((text or "").split())):
        out.append("\\" + ch if ch in "\\`*_[]<>|~&" else ch)
    return "".join(out)
