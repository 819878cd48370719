"""diff_contract_vs_impl (seed 001 §2.3): routes and status codes found in a unit's code vs its contract.json.

Reads FastAPI, Flask and Express source with regular expressions (no imports, no
execution): route decorators / calls, router prefixes (`APIRouter(prefix=)`,
`include_router(prefix=)`, `register_blueprint(url_prefix=)`, `app.use('/p', router)`),
and the status codes each handler can produce (`HTTPException(404)`, `abort(404)`,
`return x, 201`, `res.status(404)`, `res.sendStatus(204)`, a decorator's
`status_code=`, or the framework default 200). A handler is the code from its
route to the next route (Express) or the end of its indented body (Python).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field

from ..units import Contract
from .sdd import normalize_path, path_matches

Framework = Literal["fastapi", "flask", "express", "python", "node"]
DivergenceKind = Literal[
    "missing_route", "undeclared_route", "status_not_implemented", "undeclared_status", "missing_function"
]
AUTOMATIC = {"fastapi": {422}, "flask": set(), "express": set()}  # statuses the framework produces itself


@dataclass(frozen=True)
class SourceFile:
    rel: str  # project-relative path
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


class CodeRoute(BaseModel):
    method: str
    path: str  # normalised, prefixes applied
    file: str
    line: int
    statuses: dict[int, int] = Field(default_factory=dict)  # status -> line that produces it
    throws_at: int | None = None  # a `throw` / `raise` of a non-HTTP error in the handler

    def produces(self, status: int) -> bool:
        return status in self.statuses


class Divergence(BaseModel):
    kind: DivergenceKind
    method: str | None = None
    path: str | None = None
    status: int | None = None
    detail: str
    file: str | None = None
    line: int | None = None


class ContractDiff(BaseModel):
    """{matches, divergences[]} of seed 001, plus the routes that were found."""

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


def scan_routes(sources: list[SourceFile], framework: Framework) -> list[CodeRoute]:
    if framework in ("fastapi", "flask", "python"):
        return _python_routes(sources)
    return _express_routes(sources)


def diff_sources(
    unit_id: str, sources: list[SourceFile], contract: Contract | None, declared: str | None = None
) -> ContractDiff:
    framework = detect_framework(sources, declared)
    diff = ContractDiff(unit_id=unit_id, framework=framework, routes=scan_routes(sources, framework))
    if contract is None:
        return diff
    automatic = AUTOMATIC.get(framework, set())
    for ep in contract.exports.http:
        route = diff.route(ep.method, ep.path)
        label = f"{ep.method} {ep.path}"
        if route is None:
            diff.divergences.append(
                Divergence(
                    kind="missing_route",
                    method=ep.method,
                    path=ep.path,
                    detail=f"{label} is declared in contract.json but no route in the code serves it",
                )
            )
            continue
        for status in sorted(ep.responses):
            if status >= 500 or status in automatic:
                continue
            if route.produces(status):
                diff.matches.append(f"{label} {status}")
            else:
                diff.divergences.append(
                    Divergence(
                        kind="status_not_implemented",
                        method=ep.method,
                        path=ep.path,
                        status=status,
                        detail=f"{label} declares {status} but the handler at {route.file}:{route.line} never produces it",
                        file=route.file,
                        line=route.line,
                    )
                )
        for status, line in sorted(route.statuses.items()):
            if status < 500 and status not in ep.responses:
                diff.divergences.append(
                    Divergence(
                        kind="undeclared_status",
                        method=ep.method,
                        path=ep.path,
                        status=status,
                        detail=f"{label}: the code produces {status}, which contract.json does not declare",
                        file=route.file,
                        line=line,
                    )
                )
    for route in diff.routes:
        if not any(e.method == route.method and path_matches(e.path, route.path) for e in contract.exports.http):
            diff.divergences.append(
                Divergence(
                    kind="undeclared_route",
                    method=route.method,
                    path=route.path,
                    detail=f"{route.method} {route.path} is served by the code but not declared in contract.json",
                    file=route.file,
                    line=route.line,
                )
            )
    joined = "\n".join(s.text for s in sources)
    for fn in contract.exports.functions:
        if not re.search(
            rf"\b(?:def|function|async function|const|let|var|exports\.)\s*{re.escape(fn.name)}\b|\b{re.escape(fn.name)}\s*[:=]",
            joined,
        ):
            diff.divergences.append(
                Divergence(
                    kind="missing_function",
                    detail=f"function {fn.name} is declared in contract.json but not defined in the code",
                )
            )
    return diff  # fmt: skip


# -- Python: FastAPI and Flask ---------------------------------------------------------------

_PY_DECORATOR = re.compile(
    r"^\s*@([\w.]+)\.(get|post|put|patch|delete|head|options|route|api_route)\(\s*[rf]?([\"'])([^\"']*)\3(.*)$"
)
_PY_PREFIX_DEF = re.compile(r"(\w+)\s*=\s*(?:APIRouter|Blueprint)\(([^)]*)\)")
_PY_PREFIX_USE = re.compile(r"\.(?:include_router|register_blueprint)\(\s*([\w.]+)([^)]*)\)")
_PY_PREFIX_ARG = re.compile(r"(?:url_)?prefix\s*=\s*[\"']([^\"']*)[\"']")
_PY_STATUS = (
    re.compile(r"HTTPException\(\s*(?:status_code\s*=\s*)?(\d{3})\b"),
    re.compile(r"\bstatus_code\s*=\s*(\d{3})\b"),
    re.compile(r"\bstatus\.HTTP_(\d{3})_"),
    re.compile(r"\babort\(\s*(\d{3})\b"),
    re.compile(r"^\s*return\b.*,\s*(\d{3})\s*$"),
    re.compile(r"make_response\(.*,\s*(\d{3})\s*\)"),
    re.compile(r"\bstatus\s*=\s*(\d{3})\b"),
    re.compile(r"\bredirect\(.*\bcode\s*=\s*(\d{3})\b"),
)
_PY_RAISE = re.compile(r"^\s*raise\s+(?!HTTPException)(\w+)")


def _python_routes(sources: list[SourceFile]) -> list[CodeRoute]:
    prefixes: dict[str, str] = {}
    for src in sources:
        for m in _PY_PREFIX_DEF.finditer(src.text):
            arg = _PY_PREFIX_ARG.search(m.group(2))
            if arg:
                prefixes[m.group(1)] = prefixes.get(m.group(1), "") + arg.group(1)
        for m in _PY_PREFIX_USE.finditer(src.text):
            arg = _PY_PREFIX_ARG.search(m.group(2))
            if arg:
                var = m.group(1).split(".")[-1]
                prefixes[var] = arg.group(1) + prefixes.get(var, "")
    routes = []
    for src in sources:
        if not src.rel.endswith(".py"):
            continue
        lines = src.lines
        for i, line in enumerate(lines):
            m = _PY_DECORATOR.match(line)
            if not m:
                continue
            var, verb, path, rest = m.group(1).split(".")[-1], m.group(2), m.group(4), m.group(5)
            methods = re.findall(r"[\"'](\w+)[\"']", rest.split("methods", 1)[1]) if "methods" in rest else []
            methods = [x.upper() for x in methods] or (["GET"] if verb in ("route", "api_route") else [verb.upper()])
            default = re.search(r"status_code\s*=\s*(\d{3})", rest)
            body = _python_body(lines, i)
            statuses, throws_at = _statuses(lines, body, _PY_STATUS, _PY_RAISE)
            if any(
                re.match(r"^\s*return\b", lines[j])
                and not re.search(r",\s*\d{3}\s*$|status(?:_code)?\s*=|code\s*=\s*\d", lines[j])
                for j in body
            ):
                statuses.setdefault(int(default.group(1)) if default else 200, i + 1)
            for method in methods:
                full = normalize_path(_join(prefixes.get(var, ""), path))
                routes.append(
                    CodeRoute(
                        method=method, path=full, file=src.rel, line=i + 1, statuses=dict(statuses), throws_at=throws_at
                    )
                )
    return routes


def _python_body(lines: list[str], decorator: int) -> range:
    """Line indexes of the decorated function: its def line and every more-indented line after it."""
    j = decorator + 1
    while j < len(lines) and not re.match(r"^\s*(?:async\s+)?def\b", lines[j]):
        j += 1
    if j >= len(lines):
        return range(decorator, decorator + 1)
    indent = len(lines[j]) - len(lines[j].lstrip())
    end = j + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    return range(decorator, end)


# -- Express ---------------------------------------------------------------------------------

_JS_ROUTE = re.compile(r"\b(\w+)\.(get|post|put|patch|delete|all)\(\s*(['\"`])([^'\"`]*)\3")
_JS_BOUNDARY = re.compile(
    r"\b\w+\.(?:get|post|put|patch|delete|all)\(\s*['\"`]|\.use\(|\.listen\(|module\.exports|^export\s"
)
_JS_MOUNT = re.compile(r"\.use\(\s*(['\"`])([^'\"`]*)\1\s*,\s*(?:require\(\s*['\"`]([^'\"`]+)['\"`]\s*\)|(\w+))")
_JS_REQUIRE = re.compile(r"(?:const|let|var)\s+(\w+)\s*=\s*require\(\s*['\"`]([^'\"`]+)['\"`]\s*\)")
_JS_IMPORT = re.compile(r"import\s+(\w+)\s+from\s+['\"`]([^'\"`]+)['\"`]")
_JS_STATUS = (
    re.compile(r"\.status\(\s*(\d{3})\s*\)"),
    re.compile(r"\.sendStatus\(\s*(\d{3})\s*\)"),
    re.compile(r"\bstatusCode\s*=\s*(\d{3})\b"),
)
_JS_THROW = re.compile(r"^\s*throw\s+(?:new\s+)?(\w+)")
_JS_DEFAULT = re.compile(r"\bres\.(?:json|send|end|render|redirect)\(")


def _express_routes(sources: list[SourceFile]) -> list[CodeRoute]:
    by_rel = {s.rel: s for s in sources}
    file_prefix: dict[str, str] = {}
    for src in sources:
        requires = {m.group(1): m.group(2) for r in (_JS_REQUIRE, _JS_IMPORT) for m in r.finditer(src.text)}
        for m in _JS_MOUNT.finditer(src.text):
            target = m.group(3) or requires.get(m.group(4) or "")
            resolved = _resolve_js(src.rel, target, by_rel) if target else None
            if resolved:
                file_prefix[resolved] = m.group(2)
    routes = []
    for src in sources:
        if not re.search(r"\.(?:js|mjs|cjs|ts)$", src.rel):
            continue
        lines = src.lines
        for i, line in enumerate(lines):
            m = _JS_ROUTE.search(line)
            if (
                not m
                or not m.group(4).startswith("/")
                or m.group(1) in ("axios", "http", "request", "client", "supertest")
            ):
                continue
            end = next((j for j in range(i + 1, len(lines)) if _JS_BOUNDARY.search(lines[j])), len(lines))
            body = range(i, end)
            statuses, throws_at = _statuses(lines, body, _JS_STATUS, _JS_THROW)
            if any(_JS_DEFAULT.search(lines[j]) and ".status(" not in lines[j] for j in body):
                statuses.setdefault(200, i + 1)
            path = normalize_path(_join(file_prefix.get(src.rel, ""), m.group(4)))
            methods = ["GET", "POST", "PUT", "PATCH", "DELETE"] if m.group(2) == "all" else [m.group(2).upper()]
            routes.extend(
                CodeRoute(method=x, path=path, file=src.rel, line=i + 1, statuses=dict(statuses), throws_at=throws_at)
                for x in methods
            )
    return routes  # fmt: skip


def _join(prefix: str, path: str) -> str:
    return prefix.rstrip("/") + "/" + path.lstrip("/") if prefix else path


def _resolve_js(importer: str, target: str, by_rel: dict[str, SourceFile]) -> str | None:
    if not target.startswith("."):
        return None
    base = PurePosixPath(importer).parent / target
    parts: list[str] = []
    for part in base.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    stem = "/".join(parts)
    for candidate in (stem, f"{stem}.js", f"{stem}.ts", f"{stem}.mjs", f"{stem}/index.js"):
        if candidate in by_rel:
            return candidate
    return None


def _statuses(lines: list[str], body: range, patterns, throw_re) -> tuple[dict[int, int], int | None]:
    found: dict[int, int] = {}
    throws_at = None
    for j in body:
        for pattern in patterns:
            for m in pattern.finditer(lines[j]):
                found.setdefault(int(m.group(1)), j + 1)
        if throws_at is None and throw_re.search(lines[j]):
            throws_at = j + 1
    return found, throws_at
