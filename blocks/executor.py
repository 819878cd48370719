"""ExecutorSettings: which backend runs the agents, the model per role, turn limits, retries.

Register: `prefect block register -f blocks/executor.py`. Its fields are the domain's `AgentSettings` fields (types,
defaults, bounds, descriptions) without the credentials, which come from the AnthropicCredentials block;
`to_settings()` gives the domain's plain `AgentSettings` (the domain never imports Prefect).
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import create_model

from graphlemon.agents.settings import AgentSettings

from .credentials import AnthropicCredentials

CREDENTIAL_FIELDS = frozenset({"api_key", "base_url"})  # kept in the AnthropicCredentials block

_AgentFields = create_model(
    "_AgentFields",
    **{name: (f.annotation, f) for name, f in AgentSettings.model_fields.items() if name not in CREDENTIAL_FIELDS},
)


class ExecutorSettings(Block, _AgentFields):
    _block_type_name = "GraphLemon Executor Settings"
    _block_type_slug = "graphlemon-executor-settings"
    _description = (
        "Backend (scripted / anthropic / claude_code), model per role, max turns and timeouts for GraphLemon agents."
    )

    def to_settings(self, credentials: AnthropicCredentials | None = None) -> AgentSettings:
        """The domain settings; without a credentials block the key comes from ANTHROPIC_API_KEY."""
        values = self.model_dump(include=set(AgentSettings.model_fields))
        source = credentials or AgentSettings.from_env()
        values["api_key"] = source.api_key
        values["base_url"] = source.base_url
        return AgentSettings.model_validate(values)
