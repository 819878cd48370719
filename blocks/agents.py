"""Load the agents' settings from Prefect blocks when a Prefect API is configured, else from the environment."""

from __future__ import annotations

from graphlemon.agents.settings import AgentSettings


def prefect_api_configured() -> bool:
    from prefect.settings import get_current_settings

    return bool(get_current_settings().api.url)


def load_agent_settings(
    executor_block: str | None = "default", credentials_block: str | None = "default"
) -> AgentSettings:
    """Blocks named `executor_block` / `credentials_block` if they exist, else `AgentSettings.from_env()`."""
    if not prefect_api_configured():
        return AgentSettings.from_env()
    from .credentials import AnthropicCredentials
    from .executor import ExecutorSettings

    credentials = _load(AnthropicCredentials, credentials_block)
    executor = _load(ExecutorSettings, executor_block)
    if executor is None:
        settings = AgentSettings.from_env()
        if credentials is not None:
            settings = settings.model_copy(update={"api_key": credentials.api_key, "base_url": credentials.base_url})
        return settings
    return executor.to_settings(credentials)


def _load(block_cls, name: str | None):
    if not name:
        return None
    try:
        return block_cls.load(name)
    except ValueError:  # no such block document
        return None
