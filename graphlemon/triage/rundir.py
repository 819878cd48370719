"""The files the triager reads: the integration run directory and the unit files around it.

The Integrator writes these (see docs/triage.md for the layout); the models are
exported so it builds them with the same classes the triager validates with (the unit
files, `UnitsFile` and `Contract`, are in `graphlemon.units`):

    .graphlemon/integration/runs/<run_id>/result.json   IntegrationResult
    .graphlemon/integration/runs/<run_id>/http-trace.ndjson   one HttpTraceEntry per line
    .graphlemon/integration/runs/<run_id>/process.log   plain text (ISO timestamps optional)

`expected` / `got` are `Observation`s: an HTTP status and body, a plain value, or a
transport error such as "connect ECONNREFUSED 127.0.0.1:3002".
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..models import TestSummary
from ..units import UNIT_ID_RE, HttpMethod, UpperHttpMethod

RUN_ID_RE = re.compile(UNIT_ID_RE)


class Observation(BaseModel):
    """What an integration step expected or got. A bare scalar means `{"value": scalar}`."""

    model_config = ConfigDict(extra="forbid")

    status: int | None = Field(default=None, ge=100, le=599)
    body: Any = None
    value: Any = None
    error: str | None = None  # transport / process error instead of a response

    @model_validator(mode="before")
    @classmethod
    def _wrap_scalar(cls, data: Any) -> Any:
        return data if isinstance(data, dict) else {"value": data}


class HttpRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: UpperHttpMethod
    path: str
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None


class IntegrationFailure(BaseModel):
    """One failing step of one integration case (case, step, involves, expected, got, stack: docs/triage.md, "The run directory")."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(min_length=1)
    step: int = Field(default=0, ge=0)
    description: str = ""  # what the step checks, in words ("expired token is rejected with 401")
    involves: list[str] = Field(default_factory=list)  # unit ids
    request: HttpRequest | None = None
    expected: Observation = Field(default_factory=Observation)
    got: Observation = Field(default_factory=Observation)
    message: str = ""
    stack: str = ""
    ts: datetime | None = None  # when the step failed (used to window a large process.log)


class IntegrationResult(BaseModel):
    """`integration/runs/<run_id>/result.json`, written by the Integrator."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(pattern=UNIT_ID_RE)
    ok: bool
    task_id: str | None = None
    loop_round: int = 0
    code_ref: str | None = None
    crashed: bool = False  # the integration runner itself died
    summary: TestSummary = Field(default_factory=TestSummary)
    failures: list[IntegrationFailure] = Field(default_factory=list)
    started_at: datetime | None = None
    duration_ms: int = 0


class HttpTraceEntry(BaseModel):
    """One line of `http-trace.ndjson`: one HTTP call made by an integration case step."""

    model_config = ConfigDict(extra="forbid")

    ts: datetime | None = None
    case: str
    step: int = 0
    unit_id: str | None = None  # the unit that served the call, if known
    method: HttpMethod
    url: str
    request_headers: dict[str, str] = Field(default_factory=dict)
    request_body: Any = None
    status: int | None = None
    response_body: Any = None
    duration_ms: int | None = None
    error: str | None = None
