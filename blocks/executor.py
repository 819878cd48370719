"""ExecutorSettings: which backend runs the agents, the model per role, turn limits, retries.

Register: `prefect block register -f blocks/executor.py`. `to_settings()` gives the
domain's plain `AgentSettings` (the domain never imports Prefect).
"""

from __future__ import annotations

from typing import Literal

from prefect.blocks.core import Block
from pydantic import Field

from graphlemon.agents.settings import DEFAULT_MODELS, DEFAULT_TURN_LIMITS, AgentSettings

from .credentials import AnthropicCredentials


class ExecutorSettings(Block):
    _block_type_name = "GraphLemon Executor Settings"
    _block_type_slug = "graphlemon-executor-settings"
    _description = (
        "Backend (scripted / anthropic / claude_code), model per role, max turns and timeouts for GraphLemon agents."
    )

    backend: Literal["scripted", "anthropic", "claude_code"] = "scripted"
    playbook: str | None = Field(default=None, description="Playbook YAML for the scripted backend.")
    default_model: str = "claude-sonnet-5-5"
    models: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MODELS), description="Model per role.")
    max_turns: int = Field(default=20, ge=1, le=500, description="Model calls per turn for a role not in turn_limits.")
    turn_limits: dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_TURN_LIMITS), description="Model calls per turn, per role."
    )
    turn_timeout_s: float = Field(default=1800.0, gt=0)
    request_timeout_s: float = Field(default=600.0, gt=0)
    max_output_tokens: int = Field(default=32_000, ge=16)
    retry_max: int = Field(default=4, ge=0, le=20)
    retry_base_delay_s: float = Field(default=1.0, ge=0)
    retry_max_delay_s: float = Field(default=60.0, ge=0)
    claude_bin: str = "claude"
    claude_permission_mode: str = "auto"
    classifier_max_consecutive: int = Field(default=3, ge=1)
    classifier_max_total: int = Field(default=20, ge=1)

    def to_settings(self, credentials: AnthropicCredentials | None = None) -> AgentSettings:
        """The domain settings; without a credentials block the key comes from ANTHROPIC_API_KEY."""
        values = self.model_dump(include=set(AgentSettings.model_fields))
        source = credentials or AgentSettings.from_env()
        values["api_key"] = source.api_key
        values["base_url"] = source.base_url
        return AgentSettings.model_validate(values)
