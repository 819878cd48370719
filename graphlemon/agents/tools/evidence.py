"""extract_evidence (seed 001 §7.1): is each `"path: quote"` / `"path:line: quote"` really in the file?

Matching ignores case and runs of whitespace. Paths resolve through the sandbox,
so `../`, absolute paths and symlinks out of the project are refused (and
recorded as violations) instead of being read.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from ...errors import GraphLemonError
from ..context import ToolContext
from .registry import tool


class EvidenceResult(BaseModel):
    evidence: str
    ok: bool
    hit_file: str | None = None
    line: int | None = None
    reason: str | None = None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


def verify_one(ctx: ToolContext, evidence: str) -> EvidenceResult:
    sep = evidence.find(": ")
    if sep <= 0:
        return EvidenceResult(evidence=evidence, ok=False, reason='malformed: need "path: quote"')
    where, quote = _unquote(evidence[:sep]), _unquote(evidence[sep + 2 :])
    if not quote.strip():
        return EvidenceResult(evidence=evidence, ok=False, reason="empty quote")
    line_no = None
    m = re.match(r"^(.+):(\d+)$", where)
    if m and not _exists(ctx, where):
        where, line_no = m.group(1), int(m.group(2))
    try:
        real = ctx.sandbox.resolve_read(where)
    except GraphLemonError as err:
        ctx.record_tool_error("extract_evidence", err)
        return EvidenceResult(evidence=evidence, ok=False, reason=err.message)
    if not real.is_file():
        return EvidenceResult(evidence=evidence, ok=False, reason=f"file not found: {where}")
    content = real.read_text(encoding="utf-8", errors="replace")
    if line_no is not None:
        lines = content.splitlines()
        target = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
        if _norm(quote) in _norm(target):
            return EvidenceResult(evidence=evidence, ok=True, hit_file=where, line=line_no)
        return EvidenceResult(evidence=evidence, ok=False, reason=f"quote not found on line {line_no} of {where}")
    if _norm(quote) in _norm(content):
        return EvidenceResult(evidence=evidence, ok=True, hit_file=where)
    return EvidenceResult(evidence=evidence, ok=False, reason=f"quote not found in {where}")


def _exists(ctx: ToolContext, where: str) -> bool:
    try:
        return ctx.sandbox.resolve_read(where).exists()
    except GraphLemonError:
        return False


class ExtractEvidenceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    evidence: list[str] = Field(min_length=1, max_length=100, description='Each "path: quote" or "path:line: quote".')


@tool("extract_evidence", 'Verify evidence strings ("path: quote") by finding each quote in its file.')
def extract_evidence(ctx: ToolContext, args: ExtractEvidenceArgs) -> dict:
    results = [verify_one(ctx, e) for e in args.evidence]
    failed = [r for r in results if not r.ok]
    return {
        "ok": not failed,
        "results": [r.model_dump(exclude_none=True) for r in results],
        "failed": [r.model_dump(exclude_none=True) for r in failed],
    }
