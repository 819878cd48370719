"""T2: the anthropic backend, the real `anthropic` SDK against the fake Messages server on 127.0.0.1."""

from __future__ import annotations

import json
import logging

import anthropic
import pytest
from fakes.messages_server import Reply, error, overloaded, rate_limited, server_error, text, tool_use, tool_uses
from pydantic import BaseModel, SecretStr

from graphlemon.agents import Limits, build_executor
from graphlemon.agents.pricing import cost_usd
from graphlemon.errors import BudgetExceeded, ErrorCode, GraphLemonError
from graphlemon.models import BudgetConfig, UsageRecord

from .conftest import API_KEY


class Verdict(BaseModel):
    ok: bool
    failed: int


@pytest.mark.system
def test_multi_turn_tool_use_records_usage_exactly_and_marks_the_cache(
    project, messages_server, anthropic_settings, turn
):
    u1 = {"input_tokens": 1200, "output_tokens": 80, "cache_creation_input_tokens": 3000}
    u2 = {"input_tokens": 150, "output_tokens": 60, "cache_read_input_tokens": 3000}
    u3 = {"input_tokens": 90, "output_tokens": 20, "cache_read_input_tokens": 3300}
    messages_server.queue(
        tool_uses(
            [
                ("write_file", {"path": "tests/test_a.py", "content": "def test_a(): pass\n"}),
                ("list_files", {"path": "tests"}),
            ],
            usage=u1,
        ),
        tool_use("write_file", {"path": "src/app.py", "content": "pwned"}, preamble="Also fixing the code.", usage=u2),
        tool_use("submit_output", {"ok": True, "failed": 0}, usage=u3),
    )
    executor = build_executor("anthropic", settings=anthropic_settings)
    result = turn(executor, "tester", unit_id="u1", task_id="task-1", node_exec_id="ne-7", output_model=Verdict)

    assert result.ok and result.output == {"ok": True, "failed": 0} and result.executor == "anthropic"
    assert result.files_changed == ["tests/test_a.py"] and [e.path for e in result.violations] == ["src/app.py"]
    records = project.ledger.read_as("usage", UsageRecord)
    assert [(r.input_tokens, r.output_tokens, r.cache_write_tokens, r.cache_read_tokens) for r in records] == [
        (1200, 80, 3000, 0),
        (150, 60, 0, 3000),
        (90, 20, 0, 3300),
    ]
    for record, usage in zip(records, (u1, u2, u3), strict=True):
        assert record.model == "claude-sonnet-5-5" and record.executor == "anthropic" and record.role == "tester"
        assert (record.task_id, record.node_exec_id, record.stage, record.unit_id) == ("task-1", "ne-7", "tester", "u1")
        assert record.cost_usd == cost_usd(
            "claude-sonnet-5-5",
            input_tokens=usage["input_tokens"],
            output_tokens=usage["output_tokens"],
            cache_read_tokens=usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=usage.get("cache_creation_input_tokens", 0),
        )
        assert record.stop_reason == "tool_use" and record.latency_ms >= 0
    assert result.usage.calls == 3 and result.usage.input_tokens == 1440

    first, second, third = (r.body for r in messages_server.requests)
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "Tester agent" in first["system"][0]["text"]
    assert (
        first["tools"][-1]["cache_control"] == {"type": "ephemeral"} and first["tools"][-1]["name"] == "submit_output"
    )
    assert first["tools"][-1]["input_schema"]["required"] == ["ok", "failed"]
    [opening] = first["messages"]
    assert opening["role"] == "user" and opening["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert opening["content"][0]["text"].startswith("# THIS TURN") and opening["content"][0]["text"].endswith(
        "# CONTEXT\n\ndo the work"
    )
    results = second["messages"][2]["content"]
    assert [r["type"] for r in results] == ["tool_result", "tool_result"] and "is_error" not in results[0]
    assert results[0]["content"].startswith("wrote tests/test_a.py") and results[1]["content"] == "tests/test_a.py"
    refused = third["messages"][4]["content"][0]
    assert refused["is_error"] is True and "SANDBOX_VIOLATION" in refused["content"]
    assert "cache_control" not in json.dumps(third["messages"][:4])  # one moving breakpoint, on the newest block


@pytest.mark.system
def test_prompt_caching_is_visible_in_the_recorded_usage(project, messages_server, anthropic_settings, turn):
    messages_server.queue(tool_use("list_files", {}), text('{"ok": true, "failed": 0}'))  # usage computed by the fake
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Verdict)
    first, second = project.ledger.read_as("usage", UsageRecord)
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    # the second call reads everything the first wrote (tools, system, first message) and writes only the new turn
    assert second.cache_read_tokens == first.cache_write_tokens and 0 < second.cache_write_tokens < first.cache_write_tokens
    assert result.output == {"ok": True, "failed": 0}


@pytest.mark.system
def test_429_retry_after_is_honoured_and_529_5xx_are_retried(project, messages_server, anthropic_settings, turn):
    messages_server.queue(
        rate_limited(retry_after=0.3), overloaded(), server_error(503), text('{"ok": true, "failed": 0}')
    )
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Verdict)
    assert result.ok
    statuses = [r.status for r in messages_server.requests]
    assert statuses == [429, 529, 503, 200]
    gap = messages_server.requests[1].at - messages_server.requests[0].at
    assert gap >= 0.3
    assert len(project.ledger.read_as("usage", UsageRecord)) == 1  # failed attempts carry no usage
    events = [json.loads(line)["event"] for line in open(result.transcript_path)]
    assert events.count("retry") == 3


@pytest.mark.system
def test_after_the_last_retry_the_turn_fails_with_a_clear_executor_error(
    project, messages_server, anthropic_settings, turn
):
    messages_server.queue(*[overloaded(retry_after=0.01) for _ in range(4)])
    with pytest.raises(GraphLemonError) as err:
        turn(build_executor("anthropic", settings=anthropic_settings), "tester")
    assert err.value.code == ErrorCode.EXECUTOR_ERROR
    assert (
        "giving up after 4 attempt(s)" in err.value.message and "529 overloaded_error: Overloaded" in err.value.message
    )
    assert len(messages_server.requests) == 4 and messages_server.pending == 0
    assert project.ledger.read_as("usage", UsageRecord) == []


@pytest.mark.system
def test_client_errors_are_not_retried_and_never_show_the_key(project, messages_server, anthropic_settings, turn):
    messages_server.queue(error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"))
    with pytest.raises(GraphLemonError, match="400 invalid_request_error: prompt is too long"):
        turn(build_executor("anthropic", settings=anthropic_settings), "tester")
    assert len(messages_server.requests) == 1
    wrong = anthropic_settings.model_copy(update={"api_key": SecretStr("sk-ant-wrong-key-000000000000")})
    with pytest.raises(GraphLemonError) as err:
        turn(build_executor("anthropic", settings=wrong), "tester")
    assert "401 authentication_error" in err.value.message and "sk-ant-wrong" not in str(err.value.to_dict())
    assert len(messages_server.requests) == 2


@pytest.mark.system
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "hi"}]}
                ]
            },
            "unexpected `tool_use_id`",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                    {"role": "user", "content": "no result"},
                ]
            },
            "without tool_result",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]}, "must be non-empty"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, "first message must use the user role"),
        ({"messages": []}, "at least one message"),
        (
            {"messages": [{"role": "user", "content": "hi"}], "extra_body": {"temperature_typo": 1}},
            "Extra inputs are not permitted",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}] * 5,
                    }
                ]
            },
            "maximum of 4 blocks",
        ),
        (
            {
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "bad name!", "input_schema": {"type": "object"}}],
            },
            "tools.0.name",
        ),
    ],
)
def test_the_fake_rejects_malformed_requests_like_the_real_api(messages_server, kwargs, message):
    client = anthropic.Anthropic(api_key=API_KEY, base_url=messages_server.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=100, **kwargs)
    assert err.value.status_code == 400 and message in str(err.value)
    assert messages_server.requests[-1].status == 400


@pytest.mark.system
def test_an_invalid_output_goes_back_to_the_model_which_corrects_it(project, messages_server, anthropic_settings, turn):
    messages_server.queue(
        tool_use("submit_output", {"ok": "maybe"}), tool_use("submit_output", {"ok": False, "failed": 2})
    )
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Verdict)
    assert result.output == {"ok": False, "failed": 2}
    feedback = messages_server.requests[1].body["messages"][-1]["content"][0]
    assert feedback["is_error"] and "OUTPUT_INVALID" in feedback["content"] and "failed" in feedback["content"]
    assert [e.code for e in result.tool_errors] == ["OUTPUT_INVALID"]


@pytest.mark.system
def test_text_answers_json_fences_nudges_and_max_turns(project, messages_server, anthropic_settings, turn):
    executor = build_executor("anthropic", settings=anthropic_settings)
    messages_server.queue(text('Done.\n```json\n{"ok": true, "failed": 0}\n```'))
    assert turn(executor, "tester", output_model=Verdict).output == {"ok": True, "failed": 0}
    messages_server.queue(text("I think it works."), text("Still no JSON."))
    result = turn(executor, "tester", output_model=Verdict, limits=Limits(max_turns=2))
    assert result.stop_reason == "no_tool_use" and result.output is None  # told once, then the attempt ends
    nudge = messages_server.requests[2].body["messages"][-1]["content"][0]["text"]
    assert "submit_output" in nudge
    messages_server.queue(Reply(content=[{"type": "text", "text": "I can't help with that."}], stop_reason="refusal"))
    assert turn(executor, "tester").stop_reason == "refused"
    messages_server.queue(Reply(content=[], stop_reason="end_turn"), text("Tests written."))
    plain = turn(executor, "tester")  # no output model: an empty reply is nudged, a plain answer is the output
    assert plain.output == {"text": "Tests written."} and messages_server.requests[-1].status == 200


@pytest.mark.system
def test_the_turn_timeout_stops_the_loop(project, messages_server, anthropic_settings, turn):
    slow = tool_use("list_files", {})
    slow.delay_s = 0.4
    messages_server.queue(slow)
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", limits=Limits(timeout_s=0.3))
    assert result.stop_reason == "timeout" and len(messages_server.requests) == 1


@pytest.mark.system
def test_budget_preflight_never_sends_a_call_that_would_cross_the_limit(
    project, messages_server, anthropic_settings, turn
):
    project.ledger.append(BudgetConfig(task_id="task-b", limit_type="token_count", limit_value=500))
    executor = build_executor("anthropic", settings=anthropic_settings)
    with pytest.raises(BudgetExceeded) as err:
        turn(executor, "tester", task_id="task-b")
    assert err.value.code == ErrorCode.BUDGET_EXCEEDED and "was not sent" in err.value.message
    assert messages_server.requests == []  # the fake server received nothing
    assert project.ledger.read_as("usage", UsageRecord) == []


@pytest.mark.system
def test_budget_caps_max_tokens_so_the_reply_cannot_overshoot(project, messages_server, anthropic_settings, turn):
    project.ledger.append(BudgetConfig(task_id="task-c", limit_type="token_count", limit_value=12_000))
    messages_server.queue(
        tool_use("list_files", {}, usage={"input_tokens": 9_000, "output_tokens": 100}),
        text('{"ok": true, "failed": 0}', usage={"input_tokens": 10, "output_tokens": 10}),
    )
    executor = build_executor("anthropic", settings=anthropic_settings)
    with pytest.raises(BudgetExceeded):
        turn(executor, "tester", task_id="task-c", output_model=Verdict)
    first = messages_server.requests[0].body
    assert first["max_tokens"] < anthropic_settings.max_output_tokens  # capped to the remaining room
    assert len(messages_server.requests) == 1  # the second call would cross 12,000 and was not sent
    project.ledger.append(BudgetConfig(task_id="task-d", limit_type="cost_usd", limit_value=0.0001))
    with pytest.raises(BudgetExceeded, match=r"budget of \$0\.0001"):
        turn(executor, "tester", task_id="task-d")
    assert len(messages_server.requests) == 1


@pytest.mark.system
def test_no_api_key_is_a_clear_error(anthropic_settings):
    with pytest.raises(GraphLemonError, match="needs an API key"):
        build_executor("anthropic", settings=anthropic_settings.model_copy(update={"api_key": None}))


@pytest.mark.system
def test_the_api_key_never_reaches_the_ledger_transcripts_or_logs(
    project, messages_server, anthropic_settings, turn, caplog, cli
):
    caplog.set_level(logging.DEBUG)
    messages_server.queue(
        tool_use("write_file", {"path": "tests/k.py", "content": f"KEY = '{API_KEY}'\n"}),
        tool_use("bug_open", {"title": f"leaked {API_KEY}", "detail": f"x-api-key: {API_KEY}"}),
        text('{"ok": true, "failed": 0}'),
    )
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Verdict)
    assert result.ok
    sent = messages_server.requests[0].headers
    assert API_KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))  # it was really used
    leaks = [p for p in project.state_dir.rglob("*") if p.is_file() and API_KEY in p.read_text(errors="replace")]
    assert leaks == []
    assert "sk-ant-test-" in (project.root / "tests" / "k.py").read_text()  # the work tree holds what was written
    assert API_KEY not in caplog.text
    assert API_KEY not in result.model_dump_json()
    messages_server.queue(text('{"ok": true}'))
    env = {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": messages_server.base_url, "GRAPHLEMON_RETRY_MAX": "0"}
    proc = cli(
        "agent", "run", "--role", "tester", "--executor", "anthropic", "--project", str(project.root), "--json", env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert API_KEY not in proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["executor"] == "anthropic"


@pytest.mark.system
def test_the_quota_probe_is_one_tiny_request_false_while_limited(messages_server, anthropic_settings):
    messages_server.queue(
        rate_limited(), overloaded(), server_error(503), text("ok"), error(401, "authentication_error", "bad key")
    )
    executor = build_executor("anthropic", settings=anthropic_settings)
    assert [executor.probe("claude-sonnet-4-5") for _ in range(4)] == [False, False, False, True]
    bodies = [r.body for r in messages_server.messages_requests]
    assert all(b["max_tokens"] == 1 and b["model"] == "claude-sonnet-4-5" and "tools" not in b for b in bodies)
    with pytest.raises(GraphLemonError) as info:  # a probe cannot fix a bad key: that is a clear error
        executor.probe("claude-sonnet-4-5")
    assert info.value.code == ErrorCode.EXECUTOR_ERROR and API_KEY not in info.value.message
