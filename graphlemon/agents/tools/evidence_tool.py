"""extract_evidence (docs/triage.md, "Evidence") as an agent tool, over `graphlemon.triage.evidence_check.verify_all`.

One verifier serves the agent and the triager's self-check, so an agent never
sees a quote pass that the self-check would reject. Beside whether each quote is
in its file, the answer says what a cited line shows: the typed interface findings
(`graphlemon.triage.interface_diff`: path_differs, field_missing, fields_disagree, status_differs,
status_unproduced, limit_violated) that line takes part in, for the runs the
evidence names (else the latest runs). A path that tries to leave
the project (`..`, absolute, a symlink out) is also recorded as a sandbox
violation of the turn.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from ...errors import ErrorCode, GraphLemonError
from ..tool_context import ToolContext
from .registry import tool

_PATH = re.compile(r"^(?P<path>[^:\n]+?)(?::\d+)?: ")


class ExtractEvidenceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    evidence: list[str] = Field(min_length=1, max_length=100, description='Each "path: quote" or "path:line: quote".')


@tool(
    "extract_evidence",
    'Verify evidence lines ("path: quote" or "path:line: quote", paths relative to the project root) by finding '
    "each quote in its file. The result says, per line, whether it was found and where. Check every line before "
    "you cite it: the stage's check uses the same verifier and rejects an answer with a quote it cannot find.",
)
def extract_evidence(ctx: ToolContext, args: ExtractEvidenceArgs) -> dict:
    from ...triage.evidence_check import resolve_in_project, verify_all

    for item in args.evidence:
        m = _PATH.match(item.strip())
        if m is None:
            continue
        try:
            resolve_in_project(ctx.sandbox.root, m["path"].strip().strip("'\"`"))
        except GraphLemonError as err:
            if err.code == ErrorCode.SANDBOX_VIOLATION:
                ctx.record_tool_error("extract_evidence", err)
    out = verify_all(ctx.sandbox.root, args.evidence).model_dump(mode="json", exclude_none=True)
    from ...triage.agenttools import evidence_findings

    out.update(evidence_findings(ctx.project, args.evidence))  # what each cited line shows
    return out
