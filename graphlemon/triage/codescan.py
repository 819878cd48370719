"""diff_contract_vs_impl: routes and status codes found in a unit's code vs its contract.json.

Routes are found by parsing FastAPI, Flask and Express source (handlers.py: Python's `ast`,
tree-sitter for JavaScript / TypeScript; no imports, no execution): route definitions,
router prefixes (`APIRouter(prefix=)`, `include_router(prefix=)`,
`register_blueprint(url_prefix=)`, `app.use('/p', router)`), and the status codes each
handler's function can produce.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from ..units import Contract
from .code_records import CodeRoute, SourceFile
from .handlers import parsed_routes
from .sdd import path_matches

Framework = Literal["fastapi", "flask", "express", "python", "node"]
DivergenceKind = Literal[
    "missing_route", "undeclared_route", "status_not_implemented", "undeclared_status", "missing_function"
]
AUTOMATIC = {"fastapi": {422}, "flask": set(), "express": set()}  # statuses the framework produces itself


class Divergence(BaseModel):
    kind: DivergenceKind
    method: str | None = None
    path: str | None = None
    status: int | None = None
    detail: str
    file: str | None = None
    line: int | None = None


class ContractDiff(BaseModel):
    """{matches, divergences[]}, plus the routes that were found."""

    unit_id: str
    framework: Framework
    routes: list[CodeRoute] = Field(default_factory=list)
    matches: list[str] = Field(default_factory=list)
    divergences: list[Divergence] = Field(default_factory=list)

    def route(self, method: str | None, path: str) -> CodeRoute | None:
        return next(
            (r for r in self.routes if (method is None or r.method == method) and path_matches(r.path, path)), None
        )


def detect_framework(sources: Iterable[SourceFile], declared: str | None = None) -> Framework:
    if declared:
        return declared  # type: ignore[return-value]
    texts = list(sources)
    joined = "\n".join(s.text for s in texts)
    if re.search(r"^\s*(?:from|import)\s+fastapi\b", joined, re.M):
        return "fastapi"
    if re.search(r"^\s*(?:from|import)\s+flask\b", joined, re.M):
        return "flask"
    if re.search(r"require\(\s*['\"]express['\"]\s*\)|from\s+['\"]express['\"]", joined):
        return "express"
    return "python" if any(s.rel.endswith(".py") for s in texts) else "node"


def diff_sources(
    unit_id: str, sources: list[SourceFile], contract: Contract | None, declared: str | None = None
) -> ContractDiff:
    framework = detect_framework(sources, declared)
    diff = ContractDiff(unit_id=unit_id, framework=framework, routes=parsed_routes(sources, framework))
    if contract is None:
        return diff
    automatic = AUTOMATIC.get(framework, set())
    for ep in contract.exports.http:
        route = diff.route(ep.method, ep.path)
        label = f"{ep.method} {ep.path}"
        if route is None:
            diff.divergences.append(Divergence(kind="missing_route", method=ep.method, path=ep.path,
                detail=f"{label} is declared in contract.json but no route in the code serves it"))  # fmt: skip
            continue
        for status in sorted(ep.responses):
            if status >= 500 or status in automatic:
                continue
            if route.produces(status):
                diff.matches.append(f"{label} {status}")
            else:
                diff.divergences.append(Divergence(kind="status_not_implemented", method=ep.method, path=ep.path,
                    status=status,
                    detail=f"{label} declares {status} but the handler at {route.file}:{route.line} never produces it",
                    file=route.file, line=route.line))  # fmt: skip
        for status, line in sorted(route.statuses.items()):
            if status < 500 and status not in ep.responses:
                diff.divergences.append(Divergence(kind="undeclared_status", method=ep.method, path=ep.path,
                    status=status,
                    detail=f"{label}: the code produces {status}, which contract.json does not declare",
                    file=route.file, line=line))  # fmt: skip
    for route in diff.routes:
        if not any(e.method == route.method and path_matches(e.path, route.path) for e in contract.exports.http):
            diff.divergences.append(Divergence(kind="undeclared_route", method=route.method, path=route.path,
                detail=f"{route.method} {route.path} is served by the code but not declared in contract.json",
                file=route.file, line=route.line))  # fmt: skip
    joined = "\n".join(s.text for s in sources)
    for fn in contract.exports.functions:
        if not re.search(
            rf"\b(?:def|function|async function|const|let|var|exports\.)\s*{re.escape(fn.name)}\b|\b{re.escape(fn.name)}\s*[:=]",
            joined,
        ):
            diff.divergences.append(Divergence(kind="missing_function",
                detail=f"function {fn.name} is declared in contract.json but not defined in the code"))  # fmt: skip
    return diff  # fmt: skip
