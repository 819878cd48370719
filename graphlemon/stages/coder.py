"""Coder stage (loop L1): one coder turn in the unit's worktree, committed.

The coder sees the unit, its acceptance criteria, its contract, the units it depends on and
which SDD sections are its own (the whole SDD is a shared document, sent once and cached for every
unit), plus the previous attempt's test failures as hints; it may write only the unit's code paths.
The turn, its answer and its commit are memoised per attempt, so a resumed run never repeats a
finished turn.
"""

from __future__ import annotations

import os
import threading
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from ..agents.executor_seam import MISBEHAVIOUR
from ..models import OutcomeRecord
from ..nodes import node_exec_id
from .session import LoopSession


class CoderOutput(BaseModel):
    """The coder role's answer for one turn."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        description="One paragraph: what you changed and why; questions about the SDD go here (nobody answers them "
        "during the run)",
    )
    files: list[str] = Field(
        default_factory=list,
        description="The files you changed, relative to the work tree (checked against what the commit changed)",
    )


class CoderTurn(BaseModel):
    """A recorded coder turn: `files_changed` is what its commit changed (not what the answer says it changed);
    `claimed_unchanged` names the files the answer reported that the commit leaves as they were."""

    attempt: int
    commit: str | None
    files_changed: list[str]
    summary: str
    claimed_unchanged: list[str] = Field(default_factory=list)
    stopped: str = ""  # how the turn ended when it gave no answer: "refused: ...", "no_tool_use: ...", ...

    def claims_note(self) -> str:
        """For the next attempt: how the last turn ended without an answer, and the files it said it changed and did
        not (a write refused, or never made)."""
        note = f"Your previous attempt ended without an answer ({self.stopped}).\n" if self.stopped else ""
        if not self.claimed_unchanged:
            return note
        return note + (f"Your previous answer reported changing {', '.join(self.claimed_unchanged)}, but its commit "
                       "leaves them unchanged: a write may have been refused (read the tool results) or never made.\n")  # fmt: skip


NO_ANSWER = "(no answer; the changes so far are tested: "  # the summary of a turn that gave none (`_coder_answer`)


def _stopped(answer: CoderOutput) -> str:
    """How the turn ended when it gave no answer ('' when it answered): the recorded answer is all a resumed run has."""
    return answer.summary.removeprefix(NO_ANSWER).removesuffix(")") if answer.summary.startswith(NO_ANSWER) else ""


def prior_attempts(session: LoopSession, unit_id: str, nid: str) -> int:
    """Coder attempts this unit used in its earlier node executions (the unit's counter runs across rounds)."""
    nodes = session.nodes.for_task(session.task_id)
    return max(
        (n.attempt for n in nodes if n.stage == "coder" and n.unit_id == unit_id and n.node_exec_id != nid), default=0
    )


def red_units(session: LoopSession) -> list[str]:
    """Units whose latest coder node in this task is not done (blocked, or never coded)."""
    latest: dict[str, tuple] = {}
    for n in session.nodes.for_task(session.task_id):
        if n.stage == "coder" and n.unit_id:
            key = (n.loop_round, n.started_at)
            if n.unit_id not in latest or key >= latest[n.unit_id][0]:
                latest[n.unit_id] = (key, n.status)
    return [u for u in session.unit_files.units().ids() if latest.get(u, (None, "missing"))[1] != "done"]


def unit_node_id(task_id: str, unit_id: str, loop_round: int, pass_tag: str = "") -> str:
    """The L1 node of a unit in a round (`pass_tag`: an L2 reset of the unit within the round)."""
    return node_exec_id(task_id, "coder", unit_id=unit_id, loop_round=loop_round) + (f"-{pass_tag}" if pass_tag else "")


def coder_turn(
    session: LoopSession, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, hints: str | None
) -> CoderTurn:
    """One coder turn in the unit's worktree, committed; memoised per attempt (`attempt` counts across rounds,
    `first` is this round's first attempt: the turn is attempt `attempt - first + 1` of its round)."""
    return session.memo(
        nid, f"a{attempt}-coder", CoderTurn, lambda: _turn(session, nid, unit_id, attempt, hints),
        then=lambda turn: _recorded(session, unit_id, turn),
    )  # fmt: skip


def _turn(session: LoopSession, nid: str, unit_id: str, attempt: int, hints: str | None) -> CoderTurn:
    worktree = session.worktrees.unit(unit_id)
    files = session.unit_files
    unit, spec = files.unit(unit_id), files.spec(unit_id)
    contract = files.contract(unit_id)
    sdd_record = session.artifacts.latest("sdd", task_id=session.task_id)
    sdd = session.artifacts.read_text(sdd_record) if sdd_record else ""
    context = {
        "Unit": f"{unit_id}: {unit.title}\ncode (you may write only here): {', '.join(unit.code)}",
        "Acceptance criteria": "\n".join(
            f"- {c.id}: {c.text}" + (f" (SDD {c.sdd_section})" if c.sdd_section else "")
            for c in spec.acceptance_criteria
        ),
        "Contract": contract.model_dump_json(indent=1, exclude_none=True) if contract else "(none)",
        "Units it depends on": _dependencies(files, unit) or "(none)",
        "The unit's SDD sections": _own_sections(sdd, [c.sdd_section for c in spec.acceptance_criteria]),
    }
    if hints:
        context["PREVIOUS ATTEMPT (fix this first)"] = hints

    def ask() -> CoderOutput:  # the model's answer, paid once even when the run dies before the commit
        result = session.run_turn(
            "coder", context, output_model=CoderOutput, node_exec_id=nid, workdir=worktree.path,
            writable=_globs(unit.code), unit_id=unit_id, attempt=attempt, documents={"SDD": sdd},
        )  # fmt: skip
        return _coder_answer(session, result, nid, attempt)

    answer = session.memo(nid, f"a{attempt}-coder-answer", CoderOutput, ask)
    commit = session.commit_work(worktree, f"coder: {unit_id} attempt {attempt}: {answer.summary[:60]}",
                                 node_exec_id=nid, stage="coder", unit_id=unit_id)  # fmt: skip
    changed = session.worktrees.commit_files(worktree, commit) if commit else []
    unmet = unmet_claims(answer.files, changed)
    if unmet:
        session.timeline("coder_claims_unmet", f"{unit_id}: attempt {attempt} reported {', '.join(unmet)} as "
                         "changed; its commit leaves them unchanged", unit_id=unit_id, ref=nid)  # fmt: skip
    return CoderTurn(attempt=attempt, commit=commit, files_changed=changed, summary=answer.summary,
                     claimed_unchanged=unmet, stopped=_stopped(answer))  # fmt: skip


def unmet_claims(claimed: list[str], changed: list[str]) -> list[str]:
    """The claimed paths no changed file matches: a path the commit changed, or a folder holding one."""
    done = [PurePosixPath(c) for c in changed]
    unmet = []
    for raw in claimed:
        path = PurePosixPath(raw.strip().removeprefix("./"))
        if str(path) in ("", ".") or any(c == path or path in c.parents for c in done):
            continue
        unmet.append(str(path))
    return sorted(set(unmet))


def _recorded(session: LoopSession, unit_id: str, turn: CoderTurn) -> None:
    """After a turn is recorded: the unit's coder.log, and the diff against the integration branch as an artifact."""
    write_coder_log(session, unit_id)
    worktree, attempt = session.worktrees.unit(unit_id), turn.attempt
    if turn.commit:
        diff = session.worktrees.diff(worktree, session.worktrees.integration().branch)
        if diff.strip():
            session.artifacts.write("code_diff", diff, task_id=session.task_id, unit_id=unit_id, suffix=".diff",
                                    title=f"{unit_id} attempt {attempt}")  # fmt: skip


def write_coder_log(session: LoopSession, unit_id: str) -> None:
    """`units/<unit>/coder.log`, one line per coder turn of the unit in this task, rendered from the recorded turns:
    rewritten whole, so a replayed turn never logs twice."""
    prefix = unit_node_id(session.task_id, unit_id, 0).removesuffix("-r0") + "-r"
    rounds = {n.node_exec_id: n.loop_round for n in session.nodes.for_task(session.task_id) if n.unit_id == unit_id}
    turns = [
        (rounds.get(r.node_exec_id, 0), CoderTurn.model_validate(r.value))
        for r in session.ledger.read_as("outcome", OutcomeRecord)
        if r.node_exec_id.startswith(prefix) and r.model == "CoderTurn"
    ]
    text = "".join(f"[round {r} attempt {t.attempt}] {t.summary}\n" for r, t in turns)
    path = session.unit_files.unit_dir(unit_id) / "coder.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _coder_answer(session: LoopSession, result, nid: str, attempt: int) -> CoderOutput:
    """The coder's answer. A coder that ran out of model calls or time, refused, replied without tools or repeated
    itself has still left its work in the tree (perhaps none): that work is tested as this attempt, and the next
    attempt starts from the test's verdict and is told how this one ended."""
    if result.ok and result.output is not None:
        return CoderOutput.model_validate(result.output)
    if result.stop_reason in ("max_turns", "timeout"):
        session.timeline("coder_out_of_turns", f"{result.unit_id}: {result.stop_reason} after {result.turns} model "
                         "calls; its changes are tested as this attempt", unit_id=result.unit_id, ref=nid)  # fmt: skip
    if result.stop_reason in ("max_turns", "timeout", *MISBEHAVIOUR):
        why = f"{result.stop_reason}: {result.output_error}" if result.output_error else result.stop_reason
        return CoderOutput(summary=f"{NO_ANSWER}{why})", files=result.files_changed)
    raise session.turn_failed("coder", nid, attempt, result)


def _own_sections(sdd: str, numbers: list[str | None]) -> str:
    """Which SDD sections the unit's criteria cite, by their headings (the text is in the shared SDD)."""
    wanted = {n.strip().lstrip("§").strip().split(" ", 1)[0].rstrip(".") for n in numbers if n and n.strip(" §")}
    headings = [line.lstrip("#").strip() for line in sdd.splitlines() if line.lstrip().startswith("#")]
    found = [h for h in headings if h.split(" ", 1)[0].lstrip("§").rstrip(".") in wanted]
    if not found:
        return "(its criteria cite no section of the SDD: read the SDD among the shared documents)"
    return "In the SDD among the shared documents: " + "; ".join(f"§ {h}" for h in found)


def _dependencies(files, unit) -> str:
    lines = []
    for dep in unit.depends_on:
        entry = files.units().get(dep)
        if entry is not None:
            lines.append(f"- {dep}: {', '.join(entry.code)} (read its code to call it; do not change it)")
    return "\n".join(lines)


def _globs(paths: list[str]) -> list[str]:
    return [p if any(ch in p for ch in "*?[") or "." in p.rsplit("/", 1)[-1] else p.rstrip("/") + "/**" for p in paths]
