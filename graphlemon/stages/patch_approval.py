"""A person approves a contract_mismatch's SDD patch: the one domain call behind `graphlemon approve-patch` and the
console's approval page (docs/triage.md, "What is applied without a person").

A patch waits for a person when its triage record says so (`will_auto_apply` false, a `proposed_sdd_patch`): the
SDD holds another statement about the element, or only two sides show the disagreement. `pending_patches` lists
them (the latest triage of each run, not yet approved), `preview` shows the diff against the task's current SDD,
`approve` writes the patched SDD as a new artifact version and records `sdd_patch_approved` on the task's timeline.
A patch is approved once; approving again is refused.
"""

from __future__ import annotations

import difflib
import re

from pydantic import BaseModel

from ..artifacts import ArtifactStore
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..models import ArtifactRecord, SddPatch, TimelineEvent, TriageRecord
from ..project import ProjectHandle
from .planner import patch_markdown

APPROVED = "sdd_patch_approved"
_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


class PatchPreview(BaseModel):
    run_id: str
    task_id: str | None
    units: list[str]
    root_cause: str
    review: str | None  # why it waits for a person
    patch: SddPatch
    sdd_artifact: str | None  # the SDD version it applies to
    diff: str  # unified diff of that version and the patched text ("" when it cannot be applied)
    problem: str | None = None  # why it cannot be applied as it is
    approved: str | None = None  # the new SDD artifact, once approved


def pending_patches(project: ProjectHandle) -> list[PatchPreview]:
    """The SDD patches that wait for a person, newest first."""
    approved = _approved(project)
    latest: dict[str, TriageRecord] = {}
    for record in project.ledger.read_as("triage", TriageRecord):
        latest[record.run_id] = record
    waiting = [r for r in latest.values() if _waits(r) and r.run_id not in approved]
    return [preview(project, r.run_id) for r in sorted(waiting, key=lambda r: r.ts, reverse=True)]


def preview(project: ProjectHandle, run_id: str) -> PatchPreview:
    record = _record(project, run_id)
    patch = record.proposed_sdd_patch
    if patch is None:
        raise invalid_param(f"the triage of run {run_id} proposes no SDD patch ({record.category})", run_id=run_id)
    current = ArtifactStore(project.ledger).latest("sdd", task_id=record.task_id)
    out = PatchPreview(run_id=run_id, task_id=record.task_id, units=record.affected_units, root_cause=record.root_cause,
                       review=record.patch_review, patch=patch, sdd_artifact=current.artifact_id if current else None,
                       diff="", approved=_approved(project).get(run_id))  # fmt: skip
    if current is None:
        out.problem = "the task has no recorded SDD artifact to patch"
        return out
    before = ArtifactStore(project.ledger).read_text(current)
    try:
        after = patched(before, patch, record.affected_units)
    except GraphLemonError as exc:
        out.problem = exc.message
        return out
    out.diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{current.path}",
                                            f"b/{current.path} (patched)"))  # fmt: skip
    return out


def approve(project: ProjectHandle, run_id: str, *, by: str = "cli") -> ArtifactRecord:
    """Apply the run's SDD patch as a new SDD version; refused when nothing waits or it was approved already."""
    shown = preview(project, run_id)
    if shown.approved:
        raise GraphLemonError(ErrorCode.INVALID_TRANSITION, f"the SDD patch of run {run_id} was approved already "
                              f"({shown.approved})", run_id=run_id)  # fmt: skip
    record = _record(project, run_id)
    if not _waits(record):
        why = "was applied by the loop" if record.will_auto_apply else "is not a contract_mismatch patch"
        raise GraphLemonError(ErrorCode.INVALID_TRANSITION, f"the triage of run {run_id} {why}", run_id=run_id)
    if shown.problem or shown.sdd_artifact is None:
        raise invalid_param(f"the SDD patch of run {run_id} cannot be applied: {shown.problem}", run_id=run_id)
    store = ArtifactStore(project.ledger)
    current = store.get(shown.sdd_artifact)
    text = patched(store.read_text(current), shown.patch, record.affected_units)
    new = store.write("sdd", text, task_id=record.task_id, depends_on=current.depends_on_artifact_ids,
                      title=f"Software design (SDD patch of {run_id}, approved by {by})")  # fmt: skip
    project.ledger.append(TimelineEvent(event=APPROVED, task_id=record.task_id, ref=run_id,
                                        summary=f"{by} approved the SDD patch of {run_id}: {new.artifact_id}"))  # fmt: skip
    return new


def patched(text: str, patch: SddPatch, units: list[str]) -> str:
    """The SDD with the patch under its target section; a `#unit-x` target the SDD has no heading for goes under the
    heading that names unit x."""
    try:
        return patch_markdown(text, patch)
    except GraphLemonError:
        unit = patch.target_section.lstrip("#").removeprefix("unit-")
        if unit not in units:
            raise
        return patch_markdown(text, patch.model_copy(update={"target_section": unit}))


def _waits(record: TriageRecord) -> bool:
    return (
        record.category == "contract_mismatch" and record.proposed_sdd_patch is not None and not record.will_auto_apply
    )


def _record(project: ProjectHandle, run_id: str) -> TriageRecord:
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise invalid_param(f"run id {run_id!r} must be letters, digits, '.', '_' or '-' (at most 100)")
    found = [r for r in project.ledger.read_as("triage", TriageRecord) if r.run_id == run_id]
    if not found:
        raise GraphLemonError(ErrorCode.RUN_NOT_FOUND, f"no triage of run {run_id!r} in this project", run_id=run_id)
    return found[-1]


def _approved(project: ProjectHandle) -> dict[str, str]:
    """run_id -> the approval's summary, from the timeline."""
    return {
        e.ref: e.summary for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == APPROVED and e.ref
    }


__all__ = ["APPROVED", "PatchPreview", "approve", "patched", "pending_patches", "preview"]
