"""Fixtures for the agents tests: a project, playbooks, the fake Messages server, the fake claude."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from fakes.claude import FakeClaude
from fakes.messages_server import FakeMessagesServer

API_KEY = "sk-ant-test-0123456789abcdefSECRET"


@pytest.fixture
def write_playbook(tmp_path: Path):
    """write_playbook(yaml_text, name="pb.yaml") -> Path."""

    def write(text: str, name: str = "pb.yaml") -> Path:
        path = tmp_path / "playbooks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture
def messages_server():
    with FakeMessagesServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def anthropic_settings(messages_server):
    from graphlemon.agents import AgentSettings

    return AgentSettings(
        backend="anthropic",
        api_key=API_KEY,
        base_url=messages_server.base_url,
        retry_max=3,
        retry_base_delay_s=0.001,
        retry_max_delay_s=0.5,
        request_timeout_s=10,
    )


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch) -> FakeClaude:
    fake = FakeClaude(tmp_path)
    fake.setenv(monkeypatch)
    yield fake
    fake.close()


@pytest.fixture
def claude_settings(fake_claude):
    from graphlemon.agents import AgentSettings

    return AgentSettings(backend="claude_code", claude_bin=str(fake_claude.bin), claude_egress=[fake_claude.egress])


@pytest.fixture
def turn(project):
    """turn(executor, role, **build_request kwargs) -> AgentResult, in the `project` fixture's repo."""
    from graphlemon.agents import build_request, run_turn

    def run(executor, role: str = "tester", context: str = "do the work", **kw):
        return run_turn(project, build_request(project, role, context=context, **kw), executor)

    return run
