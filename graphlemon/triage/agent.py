"""The agent path: the bug-triager role proposes a verdict, the deterministic self-check decides.

One turn through any Executor (scripted, anthropic, claude_code) with the role's
skill, the failure context and the triage tools; its structured output must be a
`TriageVerdict`. The self-check runs on it with the turn's todolist and
every file the turn changed (scanSandbox). A rejected proposal is retried once,
with the violations in the prompt; a second rejection becomes the fallback
(spec_ambiguous, confidence 0.3, escalate). A triage.json the agent wrote itself
is put back as it was: the triager writes triage.json only after the check passes.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from ..agents import build_request, run_turn
from ..agents.roles import role_spec
from ..project import ProjectHandle
from .agenttools import AGENT_TOOLS
from .mechanisms import findings_of
from .proposal import Proposal, fallback
from .run_context import RunContext
from .verdict import TodoItem, TriageVerdict, Violation
from .verdict_selfcheck import changed_since, self_check, snapshot

ATTEMPTS = 2


def agent_proposal(
    project: ProjectHandle,
    ctx: RunContext,
    executor: Any,
    *,
    task_id: str | None,
    node_exec_id: str | None,
    without: frozenset[str] = frozenset(),
) -> Proposal:
    """An accepted verdict, or the fallback after `ATTEMPTS` rejected proposals. `without={"environment"}`: an
    infra_flake re-run failed the same way, and the prompt says the environment hypothesis is dropped."""
    findings = findings_of(ctx, ctx.result.failures[0])
    node_exec_id = node_exec_id or f"ne-triage-{secrets.token_hex(4)}"
    tools = [*role_spec("bug-triager").tools, *AGENT_TOOLS]
    rejected: list[list[Violation]] = []
    tokens = 0
    for attempt in range(1, ATTEMPTS + 1):
        request = build_request(
            project, "bug-triager", context=failure_context(ctx, rejected[-1] if rejected else None, without),
            run_id=ctx.run_id, task_id=task_id, node_exec_id=node_exec_id, attempt=attempt,
            output_model=TriageVerdict, tools=tools,
        )  # fmt: skip
        triage_json = ctx.run_dir / "triage.json"
        kept = triage_json.read_bytes() if triage_json.exists() else None
        before = snapshot(ctx.root)
        result = run_turn(project, request, executor)
        tokens += result.usage.total_tokens
        changed = set(changed_since(before, ctx.root)) | set(result.files_changed)
        _restore(triage_json, kept)
        violations, _ = self_check(
            result.output, root=ctx.root, run_id=ctx.run_id, unit_ids=ctx.units.ids(),
            todolist=read_todolist(project, node_exec_id), changed_files=sorted(changed),
            output_error=None if result.ok else (result.output_error or f"the turn stopped: {result.stop_reason}"),
        )  # fmt: skip
        violations += [
            Violation(item=10, check="only triage.json written", detail=f"{e.tool}: {e.message}")
            for e in result.violations
        ]
        if not violations:
            verdict = TriageVerdict.model_validate(result.output)
            return Proposal(verdict, executor.name, tokens_used=tokens, rule="agent", rejected=rejected,
                            findings=findings)  # fmt: skip
        rejected.append(sorted(violations, key=lambda v: v.item))
    reason = f"{ATTEMPTS} proposals failed the self-check; last: " + "; ".join(
        f"#{v.item} {v.detail}" for v in rejected[-1][:3]
    )
    return Proposal(fallback(ctx, reason), executor.name, tokens_used=tokens, rule="agent:fallback",
                    rejected=rejected, fallback_reason=reason, findings=findings)  # fmt: skip


def failure_context(
    ctx: RunContext, violations: list[Violation] | None, without: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The turn's prompt: a `## Failure Context` (result.json excerpt, units, files to read)."""
    failure = ctx.result.failures[0]
    units = "\n".join(
        f"- {u.unit_id}: code {', '.join(u.code) or '-'}; contract {ctx.contract_rel(u.unit_id)}" + (" (involved)" if u.unit_id in failure.involves else "")
        for u in ctx.units.units
    )  # fmt: skip
    files = [
        f"{ctx.run_rel}/result.json",
        f"{ctx.run_rel}/http-trace.ndjson",
        f"{ctx.run_rel}/process.log",
        *(d.rel for d in ctx.sdd_docs),
    ]
    out = {
        "Failure Context": (
            f"run_id: {ctx.run_id} ({len(ctx.result.failures)} failure(s); triage the first)\n\n"
            f"```json\n{json.dumps(failure.model_dump(mode='json', exclude_none=True), indent=2, ensure_ascii=False)[:4000]}\n```"
        ),
        "Units (units.json)": units,
        "Files": "\n".join(f"- {f}" for f in files),
        "Output": (
            "Answer with a TriageVerdict: run_id, root_cause, category, affected_units, proposed_sdd_patch, "
            'confidence, evidence (each "path: quote" or "path:line: quote", paths relative to the project root), '
            "l3_question (for spec_ambiguous). The verdict is checked by a self-check before it is written."
        ),
    }
    if "environment" in without:
        out["Environment hypothesis dropped"] = (
            "An earlier triage of this failure said infra_flake and its re-run failed the same way: do not answer "
            "infra_flake again (that answer escalates to a person); decide among the other categories."
        )
    if violations:
        out["Your previous proposal was rejected"] = "\n".join(
            f"- check {v.item} ({v.check}): {v.detail}" for v in violations
        )
    return out


def read_todolist(project: ProjectHandle, node_exec_id: str) -> list[TodoItem] | None:
    path = project.state_dir / "agent-state" / node_exec_id / "bug-triager-todo.json"
    if not path.is_file():
        return None
    try:
        return [TodoItem.model_validate(item) for item in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError):
        return []


def _restore(path: Path, kept: bytes | None) -> None:
    if kept is None:
        path.unlink(missing_ok=True)
    elif not path.exists() or path.read_bytes() != kept:
        path.write_bytes(kept)
