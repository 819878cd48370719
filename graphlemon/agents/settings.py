"""Executor settings as plain pydantic, read from environment variables.

The Prefect blocks in `blocks/` (AnthropicCredentials, ExecutorSettings) convert
to this model; without a Prefect server the same values come from the
environment (`AgentSettings.from_env()`):

| variable | field |
|---|---|
| GRAPHLEMON_EXECUTOR | backend (scripted / anthropic / claude_code) |
| GRAPHLEMON_PLAYBOOK | playbook (scripted backend) |
| GRAPHLEMON_MODEL, GRAPHLEMON_MODEL_<ROLE> (e.g. GRAPHLEMON_MODEL_BUG_TRIAGER) | default_model, models[role] |
| GRAPHLEMON_MAX_TURNS (every role), GRAPHLEMON_MAX_TURNS_<ROLE> | max_turns, turn_limits[role] |
| GRAPHLEMON_TURN_TIMEOUT_S, GRAPHLEMON_REQUEST_TIMEOUT_S | limits |
| GRAPHLEMON_MAX_OUTPUT_TOKENS | max_output_tokens |
| GRAPHLEMON_RETRY_MAX, GRAPHLEMON_RETRY_BASE_DELAY_S, GRAPHLEMON_RETRY_MAX_DELAY_S | retries |
| ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL | api_key, base_url |
| GRAPHLEMON_CLAUDE_BIN, GRAPHLEMON_CLAUDE_PERMISSION_MODE | claude_bin, claude_permission_mode |
| GRAPHLEMON_CLAUDE_EGRESS (comma-separated `host[:port][=address]`) | claude_egress |
| GRAPHLEMON_CLASSIFIER_MAX_CONSECUTIVE, GRAPHLEMON_CLASSIFIER_MAX_TOTAL | classifier thresholds |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from ..errors import invalid_param
from .egress_proxy import parse_rules

Backend = Literal["scripted", "anthropic", "claude_code"]

DEFAULT_MODELS: dict[str, str] = {
    "planner": "claude-opus-5-5",
    "coder": "claude-sonnet-5-5",
    "tester": "claude-sonnet-5-5",
    "integrator": "claude-sonnet-5-5",
    "bug-triager": "claude-opus-5-5",
    "validator": "claude-opus-5-5",
}
# model calls per turn: the coder and tester read, edit and run tests many times; the others mostly read and answer
DEFAULT_TURN_LIMITS: dict[str, int] = {
    "planner": 40,
    "coder": 50,
    "tester": 40,
    "integrator": 30,
    "bug-triager": 25,
    "validator": 30,
    "skill-editor": 15,
}


class AgentSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Backend = "scripted"
    playbook: Path | None = Field(default=None, description="Playbook YAML for the scripted backend.")
    default_model: str = "claude-sonnet-5-5"
    models: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MODELS), description="Model per role.")
    max_turns: int = Field(default=20, ge=1, le=500, description="Model calls per turn for a role not in turn_limits.")
    turn_limits: dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_TURN_LIMITS), description="Model calls per turn, per role."
    )
    turn_timeout_s: float = Field(default=1800.0, gt=0)
    request_timeout_s: float = Field(default=600.0, gt=0)
    max_output_tokens: int = Field(default=32_000, ge=16, le=128_000)  # a whole SDD fits in one write_file call
    # anthropic
    api_key: SecretStr | None = None
    base_url: str | None = None
    retry_max: int = Field(default=4, ge=0, le=20)  # retries after the first attempt
    retry_base_delay_s: float = Field(default=1.0, ge=0)
    retry_max_delay_s: float = Field(default=60.0, ge=0)
    # claude_code
    claude_bin: str = "claude"
    claude_permission_mode: str = "auto"
    claude_egress: list[str] = Field(
        default_factory=list,
        description="Destinations claude_code's sandbox may reach besides the API's host: host[:port][=address].",
    )
    classifier_max_consecutive: int = Field(default=3, ge=1)
    classifier_max_total: int = Field(default=20, ge=1)

    def model_for(self, role: str) -> str:
        return self.models.get(role) or self.default_model

    def max_turns_for(self, role: str) -> int:
        return self.turn_limits.get(role) or self.max_turns

    @field_validator("turn_limits")
    @classmethod
    def _positive(cls, limits: dict[str, int]) -> dict[str, int]:
        bad = [f"{role}={n}" for role, n in limits.items() if not 1 <= n <= 500]
        if bad:
            raise ValueError(f"turn limits must be 1..500, got {', '.join(bad)}")
        return limits

    @field_validator("claude_egress")
    @classmethod
    def _egress_rules(cls, entries: list[str]) -> list[str]:
        parse_rules(entries)  # INVALID_PARAM naming the bad entry
        return entries

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> AgentSettings:
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        simple = {
            "GRAPHLEMON_EXECUTOR": "backend",
            "GRAPHLEMON_PLAYBOOK": "playbook",
            "GRAPHLEMON_MODEL": "default_model",
            "GRAPHLEMON_MAX_TURNS": "max_turns",
            "GRAPHLEMON_TURN_TIMEOUT_S": "turn_timeout_s",
            "GRAPHLEMON_REQUEST_TIMEOUT_S": "request_timeout_s",
            "GRAPHLEMON_MAX_OUTPUT_TOKENS": "max_output_tokens",
            "GRAPHLEMON_RETRY_MAX": "retry_max",
            "GRAPHLEMON_RETRY_BASE_DELAY_S": "retry_base_delay_s",
            "GRAPHLEMON_RETRY_MAX_DELAY_S": "retry_max_delay_s",
            "ANTHROPIC_API_KEY": "api_key",
            "ANTHROPIC_BASE_URL": "base_url",
            "GRAPHLEMON_CLAUDE_BIN": "claude_bin",
            "GRAPHLEMON_CLAUDE_PERMISSION_MODE": "claude_permission_mode",
            "GRAPHLEMON_CLASSIFIER_MAX_CONSECUTIVE": "classifier_max_consecutive",
            "GRAPHLEMON_CLASSIFIER_MAX_TOTAL": "classifier_max_total",
        }
        for var, field in simple.items():
            if env.get(var, "").strip():
                values[field] = env[var].strip()
        if env.get("GRAPHLEMON_CLAUDE_EGRESS", "").strip():
            values["claude_egress"] = [e.strip() for e in env["GRAPHLEMON_CLAUDE_EGRESS"].split(",") if e.strip()]
        models = {} if "default_model" in values else dict(DEFAULT_MODELS)  # one model for all roles
        for role in DEFAULT_MODELS:
            var = "GRAPHLEMON_MODEL_" + role.upper().replace("-", "_")
            if env.get(var, "").strip():
                models[role] = env[var].strip()
        values["models"] = models
        limits = {} if "max_turns" in values else dict(DEFAULT_TURN_LIMITS)  # one limit for all roles
        for role in DEFAULT_TURN_LIMITS:
            var = "GRAPHLEMON_MAX_TURNS_" + role.upper().replace("-", "_")
            if env.get(var, "").strip():
                limits[role] = env[var].strip()  # type: ignore[assignment]
        values["turn_limits"] = limits
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise invalid_param(f"executor settings: {where}: {first.get('msg')}") from None
