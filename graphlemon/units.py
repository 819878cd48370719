"""The planner's unit files under `.graphlemon/`: units.json, each unit's spec.json / contract.json,
and integration/spec.json (the cases that cross units).

    .graphlemon/units.json                       UnitsFile (unit_id, code / test paths, depends_on)
    .graphlemon/units/<unit_id>/spec.json        UnitSpec (acceptance_criteria with ids)
    .graphlemon/units/<unit_id>/contract.json    Contract (exports.http responses per status / functions)
    .graphlemon/integration/spec.json            IntegrationSpec (cases, each naming the units it involves)

Criterion ids (`AC1`, `AC2`, ...) are how tests map to criteria: see `criterion_token`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ErrorCode, GraphLemonError

__all__ = [
    "UNIT_ID_RE",
    "AcceptanceCriterion",
    "Contract",
    "ContractExports",
    "ContractResponse",
    "FunctionExport",
    "HttpEndpoint",
    "IntegrationCase",
    "IntegrationSpec",
    "UnitEntry",
    "UnitSpec",
    "UnitsFile",
    "UnitFiles",
    "criterion_token",
]

M = TypeVar("M", bound=BaseModel)
UNIT_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
UpperHttpMethod = Annotated[HttpMethod, BeforeValidator(lambda v: v.upper() if isinstance(v, str) else v)]  # "get" → GET
_CRITERION_ID = r"^AC\d{1,3}$"


class UnitEntry(BaseModel):
    """One unit in `units.json`: where its code and tests live in the repository."""

    model_config = ConfigDict(extra="forbid")

    unit_id: str = Field(pattern=UNIT_ID_RE)
    title: str = ""
    code: list[str] = Field(default_factory=list)  # files, folders or globs, relative to the repository
    tests: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    framework: Literal["fastapi", "flask", "express", "python", "node"] | None = None  # None: detect


class UnitsFile(BaseModel):
    """`.graphlemon/units.json` (a bare list of units is accepted too)."""

    model_config = ConfigDict(extra="forbid")

    units: list[UnitEntry] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _accept_list(cls, data: Any) -> Any:
        return {"units": data} if isinstance(data, list) else data

    @model_validator(mode="after")
    def _unique(self) -> UnitsFile:
        ids = [u.unit_id for u in self.units]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate unit_id in units.json: {', '.join(dupes)}")
        return self

    def ids(self) -> list[str]:
        return [u.unit_id for u in self.units]

    def get(self, unit_id: str) -> UnitEntry | None:
        return next((u for u in self.units if u.unit_id == unit_id), None)


class ContractResponse(BaseModel):
    """A declared response; a bare string is its description."""

    model_config = ConfigDict(extra="ignore")

    description: str = ""
    body: Any = None

    @model_validator(mode="before")
    @classmethod
    def _wrap_text(cls, data: Any) -> Any:
        return {"description": data} if isinstance(data, str) else data


class HttpEndpoint(BaseModel):
    """An endpoint with its responses per status code (`{"200": ..., "404": ...}`)."""

    model_config = ConfigDict(extra="ignore")

    method: UpperHttpMethod
    path: str
    unit_id: str | None = None  # in `consumes`: the unit that provides it
    description: str = ""
    responses: dict[int, ContractResponse] = Field(default_factory=dict)


class FunctionExport(BaseModel):
    """A function a non-HTTP unit exports (e.g. `step(state, direction) -> State`)."""

    model_config = ConfigDict(extra="ignore")

    name: str
    signature: str = ""
    description: str = ""


class ContractExports(BaseModel):
    model_config = ConfigDict(extra="ignore")

    http: list[HttpEndpoint] = Field(
        default_factory=list, description="Only for a unit that serves HTTP: its endpoints; empty otherwise"
    )
    functions: list[FunctionExport] = Field(default_factory=list)


class Contract(BaseModel):
    """`.graphlemon/units/<unit_id>/contract.json`: what a unit provides (`exports`) and calls (`consumes`)."""

    model_config = ConfigDict(extra="ignore")

    unit_id: str
    exports: ContractExports = Field(default_factory=ContractExports)
    consumes: list[HttpEndpoint] = Field(default_factory=list)


class AcceptanceCriterion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_CRITERION_ID)
    text: str = Field(min_length=3)
    sdd_section: str | None = None  # e.g. "§3.2 Collision", cited by the validator

    @field_validator("id", mode="before")
    @classmethod
    def _upper(cls, v):
        return v.upper() if isinstance(v, str) else v


class UnitSpec(BaseModel):
    """`.graphlemon/units/<unit_id>/spec.json` (written by the planner, read by coder and tester)."""

    model_config = ConfigDict(extra="forbid")

    unit_id: str = Field(pattern=UNIT_ID_RE)
    summary: str = ""
    acceptance_criteria: list[AcceptanceCriterion] = Field(min_length=1)

    @field_validator("acceptance_criteria")
    @classmethod
    def _unique_ids(cls, criteria: list[AcceptanceCriterion]) -> list[AcceptanceCriterion]:
        ids = [c.id for c in criteria]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate criterion ids: {ids}")
        return criteria


class IntegrationCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case: str = Field(pattern=UNIT_ID_RE)
    description: str = Field(min_length=3)
    involves: list[str] = Field(min_length=1)
    sdd_section: str | None = None


class IntegrationSpec(BaseModel):
    """`.graphlemon/integration/spec.json`: cases that cross units (run by the Integrator)."""

    model_config = ConfigDict(extra="forbid")

    test_paths: list[str] = Field(default_factory=lambda: ["tests/integration"])
    cases: list[IntegrationCase] = Field(default_factory=list)


def criterion_token(criterion_id: str) -> re.Pattern[str]:
    """A test covers criterion `AC3` when its name contains the token `ac3` (case-insensitive),
    not glued to other letters or digits: `test_ac3_wall_hit`, `AC3: wall hit`, `[ac3] wall`."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(criterion_id.lower())}(?![0-9])", re.IGNORECASE)


def status_token(code: int) -> re.Pattern[str]:
    """A test covers contract status `code` when its name contains `http<code>` (e.g. `test_http400_empty_title`)."""
    return re.compile(rf"(?<![a-z0-9])http[_ -]?{code}(?![0-9])", re.IGNORECASE)


class UnitFiles:
    """Reads and writes the unit files of one project state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)

    # paths
    def unit_dir(self, unit_id: str) -> Path:
        if not re.match(UNIT_ID_RE, unit_id):
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"bad unit id {unit_id!r}")
        return self.state_dir / "units" / unit_id

    @property
    def units_path(self) -> Path:
        return self.state_dir / "units.json"

    @property
    def integration_spec_path(self) -> Path:
        return self.state_dir / "integration" / "spec.json"

    # reads
    def units(self) -> UnitsFile:
        return self._read(self.units_path, UnitsFile, missing=ErrorCode.UNIT_NOT_FOUND)

    def unit(self, unit_id: str) -> UnitEntry:
        entry = self.units().get(unit_id)
        if entry is None:
            raise GraphLemonError(ErrorCode.UNIT_NOT_FOUND, f"unit {unit_id!r} is not in units.json", unit_id=unit_id)
        return entry

    def spec(self, unit_id: str) -> UnitSpec:
        return self._read(self.unit_dir(unit_id) / "spec.json", UnitSpec, missing=ErrorCode.UNIT_NOT_FOUND)

    def contract(self, unit_id: str) -> Contract | None:
        path = self.unit_dir(unit_id) / "contract.json"
        return self._read(path, Contract, missing=ErrorCode.UNIT_NOT_FOUND) if path.exists() else None

    def integration_spec(self) -> IntegrationSpec:
        path = self.integration_spec_path
        return (
            self._read(path, IntegrationSpec, missing=ErrorCode.UNIT_NOT_FOUND) if path.exists() else IntegrationSpec()
        )

    # writes
    def write_units(self, units: UnitsFile) -> Path:
        return _write_json(self.units_path, units)

    def write_spec(self, spec: UnitSpec) -> Path:
        return _write_json(self.unit_dir(spec.unit_id) / "spec.json", spec)

    def write_contract(self, contract: Contract) -> Path:
        return _write_json(self.unit_dir(contract.unit_id) / "contract.json", contract)

    def write_integration_spec(self, spec: IntegrationSpec) -> Path:
        return _write_json(self.integration_spec_path, spec)

    @staticmethod
    def _read(path: Path, model: type[M], *, missing: ErrorCode) -> M:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise GraphLemonError(missing, f"{path} does not exist (has the planner run?)", path=str(path)) from None
        except UnicodeDecodeError as exc:
            raise GraphLemonError(
                ErrorCode.INVALID_PARAM,
                f"{path}: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                path=str(path),
            ) from None
        try:
            return model.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise GraphLemonError(
                ErrorCode.INVALID_PARAM, f"{path}: {where}: {first.get('msg')}", path=str(path)
            ) from None


def _write_json(path: Path, model: BaseModel) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(model.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path
