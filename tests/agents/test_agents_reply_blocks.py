"""A reply the harness cannot use as it came (harnessred Z03, Z04, T06, T07, N05, U01), one turn at a time through
the real anthropic SDK against the local fake Messages server (which refuses what the real API refuses: empty
text blocks, a tool_use without an id, repeated tool_use ids). Each ends in a defined state: the turn goes on with
a request the API accepts, or `ExecutorGaveUp` quoting what answered; never a traceback."""

from __future__ import annotations

import json

import pytest
from fakes.messages_server import Reply, raw, thinking, tool_use
from pydantic import BaseModel

from graphlemon.agents import build_executor
from graphlemon.agents.api_reply import MAX_DEPTH
from graphlemon.agents.context import BLOCK_OVERHEAD_CHARS, Conversation
from graphlemon.agents.reply_blocks import ToolUseIds, normalise
from graphlemon.errors import ExecutorGaveUp
from graphlemon.models import TimelineEvent, UsageRecord


class Out(BaseModel):
    summary: str


def run(turn, settings, **kw):
    return turn(build_executor("anthropic", settings=settings), "tester", output_model=Out, **kw)


def message(content: list, usage: dict | None = None) -> Reply:
    body = {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
            "stop_reason": "tool_use", "stop_sequence": None}  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return raw(json.dumps(body).encode())


def nested(levels: int) -> Reply:
    inner = '{"a": ' * levels + "1" + "}" * levels
    body = ('{"id": "m", "type": "message", "role": "assistant", "model": "x", "stop_reason": "tool_use", '
            '"content": [{"type": "tool_use", "id": "t1", "name": "list_files", "input": {"x": ' + inner + '}}], '
            '"usage": {"input_tokens": 1, "output_tokens": 1}}')  # fmt: skip
    return raw(body.encode())


def statuses(server) -> list[int]:
    return [r.status for r in server.requests]


@pytest.mark.system
@pytest.mark.parametrize("levels", [50_000, MAX_DEPTH + 5])
def test_a_reply_nested_too_deeply_is_an_executor_error_not_a_recursion_error(
    project, messages_server, anthropic_settings, turn, levels
):
    messages_server.queue(nested(levels), tool_use("submit_output", {"summary": "never reached"}))
    with pytest.raises(ExecutorGaveUp) as err:
        run(turn, anthropic_settings)
    assert "the API answered JSON nested too deeply to read" in err.value.message and '"{\\"id\\"' in err.value.message
    assert err.value.code == "EXECUTOR_ERROR" and err.value.context["attempts"] == 1 and len(messages_server.requests) == 1


@pytest.mark.system
def test_two_calls_sharing_an_id_go_back_unique_and_the_second_is_answered_not_run(
    project, messages_server, anthropic_settings, turn
):
    (project.root / "a.txt").write_text("A\n")
    twice = [{"type": "tool_use", "id": "toolu_dup", "name": "read_file", "input": {"path": "a.txt"}},
             {"type": "tool_use", "id": "toolu_dup", "name": "write_file", "input": {"path": "b.txt", "content": "B"}}]
    messages_server.queue(Reply(content=twice, stop_reason="tool_use"), tool_use("submit_output", {"summary": "ok"}))
    result = run(turn, anthropic_settings)
    assert result.ok and statuses(messages_server) == [200, 200]  # the fake refuses repeated ids, as the API does
    sent = messages_server.requests[1].body["messages"]
    ids = [b["id"] for b in sent[1]["content"] if b["type"] == "tool_use"]
    assert ids == ["toolu_dup", "toolu_gl_1"]
    answers = {b["tool_use_id"]: b for b in sent[2]["content"] if b["type"] == "tool_result"}
    assert "already used by another call" in answers["toolu_gl_1"]["content"] and answers["toolu_gl_1"]["is_error"]
    assert not (project.root / "b.txt").exists()  # the malformed call was never run
    assert [e.code for e in result.tool_errors] == ["INVALID_PARAM"]


@pytest.mark.system
def test_a_call_without_an_id_gets_one_and_is_answered_as_invalid(project, messages_server, anthropic_settings, turn):
    messages_server.queue(message([{"type": "tool_use", "name": "list_files", "input": {}}],
                                  usage={"input_tokens": 10, "output_tokens": 5}),
                          tool_use("submit_output", {"summary": "ok"}))  # fmt: skip
    result = run(turn, anthropic_settings)
    assert result.ok and statuses(messages_server) == [200, 200]
    sent = messages_server.requests[1].body["messages"]
    assert sent[1]["content"][0]["id"] == "toolu_gl_1"
    assert "it had no id" in sent[2]["content"][0]["content"]


@pytest.mark.system
def test_empty_text_blocks_are_dropped_and_thinking_goes_back_byte_for_byte(
    project, messages_server, anthropic_settings, turn
):
    block = thinking("plan: list the files")
    content = [block, {"type": "text", "text": ""}, {"type": "text", "text": " \n\t "},
               *tool_use("list_files", {}).content]  # fmt: skip
    messages_server.queue(Reply(content=content, stop_reason="tool_use"), tool_use("submit_output", {"summary": "ok"}))
    result = run(turn, anthropic_settings)
    assert result.ok and statuses(messages_server) == [200, 200]
    sent = messages_server.requests[1].body["messages"][1]["content"]
    assert sent[0] == block and [b["type"] for b in sent] == ["thinking", "tool_use"]


@pytest.mark.system
def test_ten_thousand_tiny_text_blocks_go_back_as_one(project, messages_server, anthropic_settings, turn):
    tiny = [{"type": "text", "text": "."}] * 10_000
    messages_server.queue(Reply(content=[*tiny, *tool_use("list_files", {}).content], stop_reason="tool_use"),
                          tool_use("submit_output", {"summary": "ok"}))  # fmt: skip
    result = run(turn, anthropic_settings)
    assert result.ok and statuses(messages_server) == [200, 200]
    sent = messages_server.requests[1].body["messages"][1]["content"]
    assert sent[0] == {"type": "text", "text": "." * 10_000} and len(sent) == 2


def test_every_block_counts_its_overhead():
    convo = Conversation("go")
    convo.add("assistant", [{"type": "thinking", "thinking": ".", "signature": ""}] * 1_000)
    assert convo.size() == 1_000 * (1 + BLOCK_OVERHEAD_CHARS)


def test_an_id_used_in_an_earlier_reply_is_replaced():
    ids = ToolUseIds()
    first = normalise([{"type": "tool_use", "id": "t1", "name": "x", "input": {}}], ids)
    again = normalise([{"type": "tool_use", "id": "t1", "name": "x", "input": "not an object"}], ids)
    assert first.calls[0].problem is None and first.content[0]["id"] == "t1"
    assert again.content[0] == {"type": "tool_use", "id": "toolu_gl_1", "name": "x", "input": {}}
    assert "already used" in again.calls[0].problem and "not a JSON object" in again.calls[0].problem


@pytest.mark.system
@pytest.mark.parametrize(
    ("usage", "says"),
    [
        ({"input_tokens": -70_000, "output_tokens": -4_000}, "input_tokens=-70000, output_tokens=-4000"),
        (None, "the reply had no usage"),
        ({"input_tokens": "12", "output_tokens": 1.5}, "input_tokens='12', output_tokens=1.5"),
    ],
)
def test_an_invalid_usage_is_recorded_as_the_estimate_and_named(
    project, messages_server, anthropic_settings, turn, usage, says
):
    messages_server.queue(message([{"type": "tool_use", "id": "t1", "name": "list_files", "input": {}}], usage=usage),
                          message([{"type": "tool_use", "id": "t2", "name": "list_files", "input": {"path": "."}}],
                                  usage=usage),
                          tool_use("submit_output", {"summary": "ok"}))  # fmt: skip
    result = run(turn, anthropic_settings, task_id="task-u")
    assert result.ok and statuses(messages_server) == [200, 200, 200]
    records = project.ledger.read_as("usage", UsageRecord)
    assert len(records) == 3 and all(r.input_tokens > 0 and r.output_tokens > 0 and r.cost_usd > 0 for r in records)
    [event] = project.ledger.read_as("timeline", TimelineEvent)  # once a turn, however many replies
    assert event.event == "usage_invalid" and says in event.summary and "estimate" in event.summary


@pytest.mark.system
def test_a_reply_nested_just_under_the_limit_is_used(project, messages_server, anthropic_settings, turn):
    messages_server.queue(nested(MAX_DEPTH - 6), tool_use("submit_output", {"summary": "ok"}))
    result = run(turn, anthropic_settings)
    assert result.ok and statuses(messages_server) == [200, 200]  # stored, answered, sent back: no RecursionError
