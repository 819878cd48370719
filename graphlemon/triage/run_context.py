"""Load everything one triage reads, read-only, with every path confined to the project.

`load_run(project, run_id)` validates the run id, reads the run directory
(result.json, http-trace.ndjson, process.log), units.json, each unit's
contract.json, the current SDD, the units' code,
the bug ledger and earlier triage verdicts. A process.log over `LOG_LIMIT_BYTES`
is read as a window: ±30 s around the failure when lines carry timestamps, else
its tail. Missing run → RUN_NOT_FOUND; malformed inputs → INVALID_PARAM naming
the file (and line).
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from .. import beneath
from ..agents.sandbox import glob_match
from ..bugs import Bug, BugTracker
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..models import ArtifactRecord, TriageRecord
from ..project import STATE_DIR, ProjectHandle
from ..units import Contract, UnitsFile
from .codescan import ContractDiff, SourceFile, diff_sources
from .evidence_check import resolve_in_project
from .interface import Operation
from .interface_sdd import sdd_operations
from .rundir import RUN_ID_RE, HttpTraceEntry, IntegrationResult
from .sdd import Clause, sdd_clauses

LOG_LIMIT_BYTES = 10 * 1024 * 1024
LOG_WINDOW = timedelta(seconds=30)
MAX_SOURCE_BYTES = 512 * 1024
MAX_FILES_PER_UNIT = 400
SOURCE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx")
SKIP_DIRS = frozenset(
    {"node_modules", ".git", ".venv", "venv", "__pycache__", STATE_DIR, "dist", "build", ".pytest_cache"}
)
_TS = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)")


def runs_dir(state_dir: Path) -> Path:
    return state_dir / "integration" / "runs"


@dataclass(frozen=True)
class LogLine:
    lineno: int
    text: str


@dataclass
class RunContext:
    """One integration run and the project around it, as the triager sees it."""

    root: Path
    run_id: str
    result: IntegrationResult
    trace: list[tuple[int, HttpTraceEntry]]  # (line in http-trace.ndjson, entry)
    log: list[LogLine]
    units: UnitsFile
    contracts: dict[str, Contract]
    sdd_docs: list[SourceFile]
    code: dict[str, list[SourceFile]]
    bugs: list[Bug]
    prior_triage: list[TriageRecord]
    notes: list[str] = field(default_factory=list)  # what could not be read, for the hints
    _diffs: dict[str, ContractDiff] = field(default_factory=dict, repr=False)

    @property
    def run_rel(self) -> str:
        return f"{STATE_DIR}/integration/runs/{self.run_id}"

    @property
    def run_dir(self) -> Path:
        return self.root / self.run_rel

    def contract_rel(self, unit_id: str) -> str:
        return f"{STATE_DIR}/units/{unit_id}/contract.json"

    def file_text(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8", errors="replace")

    @cached_property
    def sdd_clauses(self) -> list[Clause]:
        return sdd_clauses([(d.rel, d.text) for d in self.sdd_docs], self.units.ids())

    @cached_property
    def spec_operations(self) -> list[Operation]:
        """The endpoints the SDD states (interface_sdd.py), read once per run."""
        return sdd_operations([(d.rel, d.text) for d in self.sdd_docs], self.units.ids())

    def code_diff(self, unit_id: str) -> ContractDiff:
        if unit_id not in self._diffs:
            entry = self.units.get(unit_id)
            self._diffs[unit_id] = diff_sources(
                unit_id, self.code.get(unit_id, []), self.contracts.get(unit_id), entry.framework if entry else None
            )
        return self._diffs[unit_id]


def load_run(project: ProjectHandle, run_id: str, *, code_root: Path | str | None = None) -> RunContext:
    """`code_root`: where the units' code was integrated (e.g. the integration worktree under .graphlemon/worktrees/);
    it must be inside the project so that evidence can cite it. Default: the project root."""
    root = Path(os.path.realpath(project.root))
    code_prefix = _code_prefix(root, code_root)
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise invalid_param(f"run id {run_id!r} must be letters, digits, '.', '_' or '-' (at most 100)", run_id=run_id)
    runs = runs_dir(root / STATE_DIR)
    run_dir = runs / run_id
    if not run_dir.is_dir():
        known = sorted(p.name for p in runs.glob("*") if p.is_dir())[-5:] if runs.is_dir() else []
        hint = f"; known runs: {', '.join(known)}" if known else "; the Integrator has not written any run yet"
        raise GraphLemonError(
            ErrorCode.RUN_NOT_FOUND, f"no integration run {run_id!r}: {run_dir} does not exist{hint}", run_id=run_id
        )
    resolve_in_project(root, f"{STATE_DIR}/integration/runs/{run_id}")  # a symlinked run dir may not leave the project
    result = _read_result(run_dir, run_id)
    units = read_model(
        root / STATE_DIR / "units.json",
        UnitsFile,
        "the project has no .graphlemon/units.json (the planner writes it); triage needs the unit list",
    )
    notes: list[str] = []
    ctx = RunContext(
        root=root, run_id=run_id, result=result, trace=_read_trace(run_dir / "http-trace.ndjson"), log=[], units=units,
        contracts={}, sdd_docs=_read_sdd(root, project, notes), code={},
        bugs=list(BugTracker(project.ledger).all().values()),
        prior_triage=project.ledger.read_as("triage", TriageRecord), notes=notes,
    )  # fmt: skip
    failed_at = next((f.ts for f in result.failures if f.ts), None)
    ctx.log = _read_log(run_dir / "process.log", failed_at)
    for unit in units.units:
        unit_dir = root / STATE_DIR / "units" / unit.unit_id
        contract = unit_dir / "contract.json"
        if contract.is_file():
            ctx.contracts[unit.unit_id] = read_model(contract, Contract, "")
        ctx.code[unit.unit_id] = read_code(root, [f"{code_prefix}{p}" for p in unit.code], notes)
    return ctx


# -- readers -------------------------------------------------------------------------------


def _code_prefix(root: Path, code_root: Path | str | None) -> str:
    if code_root is None:
        return ""
    real = Path(os.path.realpath(code_root))
    if not real.is_relative_to(root) or not real.is_dir():
        raise invalid_param(
            f"code root {code_root} must be a folder inside the project {root}", code_root=str(code_root)
        )
    rel = real.relative_to(root).as_posix()
    return "" if rel == "." else rel + "/"


def _read_result(run_dir: Path, run_id: str) -> IntegrationResult:
    path = run_dir / "result.json"
    if not path.is_file():
        raise GraphLemonError(
            ErrorCode.RUN_NOT_FOUND,
            f"integration run {run_id!r} has no result.json ({path}); the Integrator writes it when the run ends",
            run_id=run_id,
        )
    result = read_model(path, IntegrationResult, "")
    if result.run_id != run_id:
        raise invalid_param(f"{path}: run_id is {result.run_id!r}, expected {run_id!r}", path=str(path))
    if not result.failures:
        raise invalid_param(
            f"integration run {run_id!r} has no failures to triage (ok={str(result.ok).lower()})", run_id=run_id
        )
    return result


def read_model(path: Path, model, missing: str):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise invalid_param(missing or f"{path} does not exist", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise invalid_param(not_utf8(path, exc), path=str(path)) from None
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
        raise invalid_param(f"{path}: {where}: {first.get('msg')}", path=str(path)) from None


def not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """The message for a file that is not UTF-8 (JSON files the triager reads must be)."""
    return f"{path}: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); the file must be UTF-8 JSON"


def _read_trace(path: Path) -> list[tuple[int, HttpTraceEntry]]:
    if not path.is_file():
        return []
    out = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append((lineno, HttpTraceEntry.model_validate_json(line)))
            except ValidationError as exc:
                first = exc.errors()[0]
                raise invalid_param(
                    f"{path}:{lineno}: not a trace entry: {first.get('msg')}", path=str(path), line=lineno
                ) from None
    return out


def parse_log_ts(text: str) -> datetime | None:
    m = _TS.match(text.strip())
    if not m:
        return None
    try:
        ts = datetime.fromisoformat(m.group(1).replace(",", ".").replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _read_log(path: Path, failed_at: datetime | None) -> list[LogLine]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", errors="replace") as fh:
        if path.stat().st_size <= LOG_LIMIT_BYTES:
            return [LogLine(i, line.rstrip("\n")) for i, line in enumerate(fh, 1)]
        if failed_at is not None:
            kept, budget, keeping = [], LOG_LIMIT_BYTES, False
            for i, line in enumerate(fh, 1):
                ts = parse_log_ts(line)
                if ts is not None:
                    keeping = abs(ts - failed_at) <= LOG_WINDOW
                if keeping and budget > 0:
                    kept.append(LogLine(i, line.rstrip("\n")))
                    budget -= len(line)
            if kept:
                return kept
            fh.seek(0)
        tail: deque[LogLine] = deque()
        size = 0
        for i, line in enumerate(fh, 1):
            tail.append(LogLine(i, line.rstrip("\n")))
            size += len(line)
            while size > LOG_LIMIT_BYTES:
                size -= len(tail.popleft().text) + 1
        return list(tail)


def _source(root: Path, path: Path) -> SourceFile:
    return SourceFile(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8", errors="replace"))


def _read_sdd(root: Path, project: ProjectHandle, notes: list[str]) -> list[SourceFile]:
    """The current SDD: the latest version of each sdd artifact in the ledger, else every file in artifacts/sdd/."""
    latest: dict[str | None, ArtifactRecord] = {}
    for record in project.ledger.read_as("artifact", ArtifactRecord):
        if record.artifact_type == "sdd" and (
            record.unit_id not in latest or record.version > latest[record.unit_id].version
        ):
            latest[record.unit_id] = record
    docs = []
    for record in latest.values():
        try:
            path = resolve_in_project(root, f"{STATE_DIR}/{record.path}")
        except GraphLemonError as exc:
            notes.append(f"sdd artifact {record.artifact_id}: {exc.message}")
            continue
        if path.is_file():
            docs.append(_source(root, path))
    if docs:
        return sorted(docs, key=lambda d: d.rel)
    folder = root / STATE_DIR / "artifacts" / "sdd"
    files = (
        sorted(p for p in folder.glob("*") if p.suffix in (".md", ".html", ".txt") and p.is_file())
        if folder.is_dir()
        else []
    )
    if not files:
        notes.append("no SDD found under .graphlemon/artifacts/sdd/")
    return [_source(root, p) for p in files if _inside(root, p)]


def _inside(root: Path, path: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(root)


def _code_files(root: Path, pattern: str, literal: str, kind: str) -> list[str]:
    """The work tree's files a units.json code path names, listed through the safe reader (no link is listed or
    followed; dependency and build folders are not entered)."""
    if "*" not in pattern:
        if kind == "file":
            return [literal]
        return beneath.walk_files(root, "" if literal == "." else literal, skip=SKIP_DIRS)[0] if kind == "dir" else []
    folder = literal if kind == "dir" else literal.rpartition("/")[0]
    return [p for p in beneath.walk_files(root, "" if folder == "." else folder, skip=SKIP_DIRS)[0] if glob_match(pattern, p)]


def read_code(root: Path, patterns: list[str], notes: list[str]) -> list[SourceFile]:
    """Source files under each units.json path (file, folder or glob), skipping dependencies and build output."""
    files: dict[str, SourceFile] = {}
    for pattern in patterns:
        literal = pattern.split("*", 1)[0].rstrip("/") or "."
        try:
            resolve_in_project(root, literal)
            kind = beneath.kind(root, "" if literal == "." else literal)
        except GraphLemonError as exc:
            notes.append(f"units.json code path {pattern!r} skipped: {exc.message}")
            continue
        candidates = _code_files(root, pattern, literal, kind)
        for rel in candidates:
            if len(files) >= MAX_FILES_PER_UNIT:
                notes.append(f"more than {MAX_FILES_PER_UNIT} source files under {pattern!r}; the rest were not read")
                break
            if Path(rel).suffix not in SOURCE_SUFFIXES:
                continue
            try:  # a link, a FIFO or a file over the cap is not read
                text = beneath.read_text(root, rel, errors="replace", max_bytes=MAX_SOURCE_BYTES)
            except (OSError, GraphLemonError):
                continue
            files.setdefault(rel, SourceFile(rel, text))
    return sorted(files.values(), key=lambda s: s.rel)
