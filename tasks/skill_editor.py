"""Prefect task of the skill-update stage (REQ-08): SkillEditor turn, one commit, the regression gate."""

from __future__ import annotations

from prefect.artifacts import create_markdown_artifact

from graphlemon.nodes import node_exec_id
from graphlemon.stages.outcomes import SkillUpdateOutcome
from graphlemon.stages.session import RunRef
from graphlemon.stages.skill_editor import run_skill_update

from ._common import stage_task, task_key, timeline_logged


@stage_task(name="skill-editor", task_run_name="skill-editor · round {loop_round}")
def skill_editor_task(run: RunRef, loop_round: int) -> SkillUpdateOutcome:
    """A skill_defect bug → a gated iteration of the blamed role's skill (applied or rejected)."""
    logged = timeline_logged(run, step=(node_exec_id(run.task_id, "skill-editor", loop_round=loop_round), "outcome"))
    with logged as session:
        outcome = run_skill_update(session, loop_round)
    if logged.reused:
        return logged.cached(outcome)
    create_markdown_artifact(
        key=task_key(session, "skill", f"r{loop_round}"),
        markdown=f"**{outcome.iteration_id}** ({outcome.skill}, bug `{outcome.bug_id}`): {outcome.status} — {outcome.note}",
        description=f"skill iteration, round {loop_round}",
    )
    return outcome
