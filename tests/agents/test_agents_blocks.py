"""Prefect blocks: registered, saved and loaded under the session harness; env fallback without Prefect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "GRAPHLEMON_"))}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**clean, **env}, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.system
def test_the_domain_never_imports_prefect():
    code = (
        "import sys, graphlemon.agents, graphlemon.agents.scripted, graphlemon.agents.anthropic_backend, "
        "graphlemon.agents.claude_code, graphlemon.agents.tools, graphlemon.cli.agent; "
        "graphlemon.agents.tools.tool_names(); print('prefect' in sys.modules)"
    )
    assert _python(code) == "False"


@pytest.mark.system
def test_without_a_prefect_api_settings_come_from_the_environment():
    code = "from graphlemon.blocks.agents import load_agent_settings as l; s = l(); print(s.backend, s.max_turns)"
    assert _python(code, GRAPHLEMON_EXECUTOR="claude_code", GRAPHLEMON_MAX_TURNS="4") == "claude_code 4"


@pytest.mark.system
@pytest.mark.slow
def test_blocks_register_save_and_load(prefect_harness, project):
    from graphlemon.agents.budget import budget_status
    from graphlemon.blocks.agents import load_agent_settings
    from graphlemon.blocks.budget import BudgetGuardrail
    from graphlemon.blocks.credentials import AnthropicCredentials
    from graphlemon.blocks.executor import ExecutorSettings

    for block in (AnthropicCredentials, ExecutorSettings, BudgetGuardrail):
        block.register_type_and_schema()
    AnthropicCredentials(api_key="sk-ant-block-secret-123456", base_url="http://127.0.0.1:1").save(
        "gl-test", overwrite=True
    )
    ExecutorSettings(backend="anthropic", max_turns=9, models={"tester": "claude-haiku-4-5"}).save(
        "gl-test", overwrite=True
    )
    BudgetGuardrail(limit_type="cost_usd", limit_value=1.5).save("gl-test", overwrite=True)

    creds = AnthropicCredentials.load("gl-test")
    assert creds.api_key.get_secret_value() == "sk-ant-block-secret-123456" and "sk-ant-block" not in repr(creds)
    settings = load_agent_settings("gl-test", "gl-test")
    assert (settings.backend, settings.max_turns, settings.model_for("tester")) == ("anthropic", 9, "claude-haiku-4-5")
    assert (
        settings.api_key.get_secret_value() == "sk-ant-block-secret-123456"
        and settings.base_url == "http://127.0.0.1:1"
    )
    assert load_agent_settings("no-such-block", "no-such-block").backend == "scripted"

    project.ledger.append(BudgetGuardrail.load("gl-test").to_budget_config("task-9"))
    status = budget_status(project.ledger, "task-9")
    assert (status.limit_type, status.limit_value) == ("cost_usd", 1.5)


def test_the_executor_block_has_the_agent_settings_fields_bounds_and_defaults():
    from pydantic import ValidationError

    from graphlemon.agents.settings import AgentSettings
    from graphlemon.blocks.executor import CREDENTIAL_FIELDS, ExecutorSettings

    assert set(ExecutorSettings.model_fields) == set(AgentSettings.model_fields) - CREDENTIAL_FIELDS
    derived = ExecutorSettings().to_settings().model_dump(exclude=CREDENTIAL_FIELDS)
    assert derived == AgentSettings().model_dump(exclude=CREDENTIAL_FIELDS)
    with pytest.raises(ValidationError):
        ExecutorSettings(max_output_tokens=1_000_000)  # above AgentSettings' bound, refused by the block itself
