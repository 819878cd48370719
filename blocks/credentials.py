"""AnthropicCredentials: the API key (SecretStr) and an optional base URL, stored in Prefect.

Register: `prefect block register -f blocks/credentials.py`; create in the UI or with
`AnthropicCredentials(api_key="sk-ant-...").save("default")`.
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import Field, SecretStr


class AnthropicCredentials(Block):
    _block_type_name = "GraphLemon Anthropic Credentials"
    _block_type_slug = "graphlemon-anthropic-credentials"
    _description = "The Anthropic API key (kept secret) and an optional Messages API base URL for GraphLemon agents."

    api_key: SecretStr = Field(description="Anthropic API key.")
    base_url: str | None = Field(default=None, description="Messages API base URL (default: Anthropic's).")
