"""Issue 48, one turn at a time: a model (or a proxy in front of it) that misbehaves in one way, through the real
anthropic SDK against the local fake Messages server. Every case ends in a defined state (an `AgentResult` with a
stop reason that names it, or `ExecutorGaveUp` quoting what answered), never an AttributeError or a traceback,
with the calls (and so the tokens) bounded. The whole loop on both engines: tests/acceptance/test_issue48_*."""

from __future__ import annotations

import json

import pytest
from fakes.messages_server import Reply, raw, text, thinking, tool_use, tool_uses
from fakes.misbehaving_model import HTML, cut_json, empty_body, html_page, not_a_message, plain_text
from pydantic import BaseModel

from graphlemon.agents import Limits, build_executor
from graphlemon.agents.context import REPLY_MAX_CHARS, Conversation
from graphlemon.agents.misbehaviour import MAX_REPEATS, NO_TOOL_REPLIES, reads_as_refusal
from graphlemon.errors import ExecutorGaveUp
from graphlemon.models import TimelineEvent, UsageRecord

KEY_SHAPED = "sk-ant-api03-" + "Q" * 40  # what a model may quote from a config file


class Out(BaseModel):
    summary: str


def events(result) -> list[dict]:
    return [json.loads(line) for line in open(result.transcript_path)]


def run(turn, settings, **kw):
    return turn(build_executor("anthropic", settings=settings), "tester", output_model=Out, **kw)


# -- what answers instead of a message ------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (html_page, "the API answered HTML (a proxy or captive portal?): \"<!DOCTYPE html>"),
        (plain_text, "the API answered text/plain, not JSON: \"upstream connect error"),
        (not_a_message, "the API answered JSON that is not a message (no type, content)"),
        (lambda: raw(HTML, "text/html", status=403), "403: HTML (a proxy or captive portal?)"),
    ],
)
def test_a_reply_no_retry_can_fix_is_an_executor_error_that_quotes_what_answered(
    project, messages_server, anthropic_settings, turn, reply, says
):
    messages_server.queue(reply(), text('{"summary": "never reached"}'))
    with pytest.raises(ExecutorGaveUp) as err:
        run(turn, anthropic_settings)
    assert says in err.value.message and err.value.code == "EXECUTOR_ERROR" and err.value.context["attempts"] == 1
    assert len(messages_server.requests) == 1 and project.ledger.read_as("usage", UsageRecord) == []


@pytest.mark.system
@pytest.mark.parametrize("reply", [empty_body, cut_json, lambda: raw(HTML, "text/html", status=502)])
def test_an_empty_or_cut_off_reply_is_retried_like_an_overload(project, messages_server, anthropic_settings, turn, reply):
    messages_server.queue(reply(), tool_use("submit_output", {"summary": "done"}))
    result = run(turn, anthropic_settings)
    assert result.ok and [r.status for r in messages_server.requests] in ([200, 200], [502, 200])
    retry = next(e for e in events(result) if e["event"] == "retry")
    assert "empty body" in retry["error"] or "does not parse" in retry["error"] or "HTML" in retry["error"]


@pytest.mark.system
def test_a_proxy_that_keeps_answering_html_with_502_gives_up_saying_so(
    project, messages_server, anthropic_settings, turn
):
    messages_server.queue(*[raw(HTML, "text/html", status=502) for _ in range(4)])
    with pytest.raises(ExecutorGaveUp) as err:
        run(turn, anthropic_settings)
    assert "giving up after 4 attempt(s)" in err.value.message and "502: HTML" in err.value.message
    assert err.value.context["attempts"] == 4


# -- text that cannot be trimmed ------------------------------------------------------------------------


@pytest.mark.system
def test_a_one_megabyte_reply_is_stubbed_once_answered(project, messages_server, anthropic_settings, turn):
    huge = Reply(content=[{"type": "text", "text": "y" * 1_000_000}, *tool_use("list_files", {}).content],
                 stop_reason="tool_use")  # fmt: skip
    messages_server.context_window = 200_000
    messages_server.queue(huge, tool_use("submit_output", {"summary": "done"}))
    result = run(turn, anthropic_settings)
    assert result.ok and [r.status for r in messages_server.requests] == [200, 200]
    sent = messages_server.requests[1].body["messages"][1]["content"][0]["text"]
    assert sent.startswith("[your earlier text of 1,000,000 characters") and len(sent) < 200


@pytest.mark.system
def test_eight_long_replies_stay_under_the_context_window(project, messages_server, anthropic_settings, turn):
    messages_server.context_window = 200_000  # 800,000 characters: eight 110k replies would not fit
    (project.root / "notes.txt").write_text("n\n")
    for i in range(8):
        messages_server.queue(Reply(content=[{"type": "text", "text": f"{i} " + "z" * 110_000},
                                             *tool_use("read_file", {"path": "notes.txt", "offset": i + 1}).content],
                                    stop_reason="tool_use"))  # fmt: skip
    messages_server.queue(tool_use("submit_output", {"summary": "done"}))
    result = run(turn, anthropic_settings, limits=Limits(max_turns=12))
    assert result.ok and all(r.status == 200 for r in messages_server.requests)
    assert max(len(json.dumps(r.body)) for r in messages_server.requests) < 200_000


def test_old_thinking_is_dropped_whole_only_after_its_cycle_closed():
    convo = Conversation("go")
    block = {"type": "thinking", "thinking": "t" * 50_000, "signature": "sig"}
    convo.add("assistant", [dict(block), {"type": "text", "text": "hm"}])
    convo.add("user", "no tool call: go on")  # a plain user message closes the tool-use cycle
    for i in range(6):
        convo.add("assistant", [dict(block), {"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}])
        convo.add("user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 20_000}])
    done = convo.prepare()
    assert done.thinking == 1 and convo.messages[1]["content"] == [{"type": "text", "text": "hm"}]
    assert all(m["content"][0] == block for m in convo.messages[3::2])  # the open cycle's thinking, byte for byte


# -- what goes back is what came ------------------------------------------------------------------------


@pytest.mark.system
def test_a_signed_thinking_block_goes_back_byte_for_byte_and_is_redacted_only_where_stored(
    project, messages_server, anthropic_settings, turn
):
    block = thinking(f"The config says {KEY_SHAPED}; not needed.")
    messages_server.queue(Reply(content=[block, *tool_use("list_files", {}).content], stop_reason="tool_use"),
                          tool_use("submit_output", {"summary": "done"}))  # fmt: skip
    result = run(turn, anthropic_settings, task_id="task-th")
    assert result.ok and [r.status for r in messages_server.requests] == [200, 200]  # the signature verified
    assert messages_server.requests[1].body["messages"][1]["content"][0] == block
    stored = [p for p in project.state_dir.rglob("*") if p.is_file() and KEY_SHAPED in p.read_text(errors="replace")]
    assert stored == [] and "[REDACTED]" in open(result.transcript_path).read()


# -- refusals ---------------------------------------------------------------------------------------------


@pytest.mark.system
def test_an_api_refusal_ends_the_attempt_at_once_and_is_named(project, messages_server, anthropic_settings, turn):
    messages_server.queue(Reply(content=[{"type": "text", "text": "I"}], stop_reason="refusal"))
    result = run(turn, anthropic_settings, task_id="task-r", unit_id="u1")
    assert result.stop_reason == "refused" and "stop_reason 'refusal'" in result.output_error
    assert len(messages_server.requests) == 1
    [event] = project.ledger.read_as("timeline", TimelineEvent)
    assert event.event == "turn_refused" and event.unit_id == "u1" and "tester u1 attempt 1 refused" in event.summary


@pytest.mark.system
def test_a_text_refusal_is_answered_once_then_named(project, messages_server, anthropic_settings, turn):
    messages_server.queue(*[text("I can't help with that request.") for _ in range(5)])
    result = run(turn, anthropic_settings, task_id="task-t")
    assert result.stop_reason == "refused" and "I can't help with that request." in result.output_error
    assert len(messages_server.requests) == 2  # one note, then the attempt ends
    note = messages_server.requests[1].body["messages"][-1]["content"][0]["text"]
    assert "If you will not do this work, say so" in note and "submit_output" in note
    assert [e.event for e in project.ledger.read_as("timeline", TimelineEvent)] == ["turn_refused"]


@pytest.mark.parametrize(
    ("reply", "refusal"),
    [("I can't help with that.", True), ("I won’t write this code.", True), ("Sorry, I am unable to do that.", True),
     ("I'll write the tests now.", False), ("The file can't be found; let me search.", False)],
)  # fmt: skip
def test_what_reads_as_a_refusal(reply, refusal):
    assert reads_as_refusal(reply) is refusal


# -- loops ------------------------------------------------------------------------------------------------


@pytest.mark.system
def test_the_same_call_again_is_answered_once_then_counted_to_a_stop(project, messages_server, anthropic_settings, turn):
    messages_server.queue(*[tool_use("list_files", {"path": "."}) for _ in range(10)])
    result = run(turn, anthropic_settings, task_id="task-l")
    assert result.stop_reason == "repeated_calls" and len(messages_server.requests) == MAX_REPEATS + 1
    assert sum(e["event"] == "tool_result" for e in events(result)) == 1  # the repeats were not run
    first = messages_server.requests[2].body["messages"][-1]["content"][0]
    assert first["is_error"] and "nothing in the work tree changed since" in first["content"]
    assert [e.event for e in project.ledger.read_as("timeline", TimelineEvent)] == ["turn_repeated_calls"]


@pytest.mark.system
def test_an_identical_failing_edit_is_told_what_failed_and_what_to_do(
    project, messages_server, anthropic_settings, turn
):
    edit = {"path": "README.md", "old": "not in the file", "new": "x"}
    messages_server.queue(*[tool_use("edit_file", dict(edit)) for _ in range(10)])
    result = run(turn, anthropic_settings, writable=["README.md"])
    assert result.stop_reason == "repeated_calls" and len(messages_server.requests) == MAX_REPEATS + 1
    note = messages_server.requests[2].body["messages"][-1]["content"][0]["content"]
    assert "It failed with: error[" in note and "read the file first" in note


@pytest.mark.system
def test_a_call_repeated_after_a_change_is_no_repeat(project, messages_server, anthropic_settings, turn):
    messages_server.queue(
        tool_use("read_file", {"path": "tests/a.py"}),
        tool_use("write_file", {"path": "tests/a.py", "content": "A = 1\n"}),
        tool_use("read_file", {"path": "tests/a.py"}),
        tool_use("submit_output", {"summary": "done"}),
    )
    result = run(turn, anthropic_settings)
    assert result.ok and not [e for e in events(result) if e["event"] == "tool_repeated"]


@pytest.mark.system
def test_a_model_that_only_writes_text_ends_as_no_tool_use(project, messages_server, anthropic_settings, turn):
    messages_server.queue(*[text("Here is my plan for the tests, step by step.") for _ in range(10)])
    result = run(turn, anthropic_settings, task_id="task-n")
    assert result.stop_reason == "no_tool_use" and len(messages_server.requests) == NO_TOOL_REPLIES
    assert f"{NO_TOOL_REPLIES} replies in a row without a tool call" in result.output_error
    assert "Here is my plan" in result.output_error


@pytest.mark.system
def test_an_empty_reply_is_told_it_was_empty(project, messages_server, anthropic_settings, turn):
    messages_server.queue(Reply(content=[], stop_reason="end_turn"), tool_use("submit_output", {"summary": "ok"}))
    assert run(turn, anthropic_settings).ok
    assert "(the reply was empty)" in messages_server.requests[1].body["messages"][-1]["content"][0]["text"]


# -- a cut tool call never runs ---------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize(("stop", "says"), [("model_context_window_exceeded", "filled the model's context window"),
                                             ("a_future_stop_reason", "stop reason 'a_future_stop_reason'")])  # fmt: skip
def test_a_call_cut_by_any_stop_reason_but_a_clean_end_is_not_run(
    project, messages_server, anthropic_settings, turn, stop, says
):
    cut = tool_uses([("write_file", {"path": "tests/half.py", "content": "def test_x():\n    assert ("})])
    cut.stop_reason = stop
    messages_server.queue(cut, tool_use("submit_output", {"summary": "done"}))
    result = run(turn, anthropic_settings)
    assert result.ok and not (project.root / "tests" / "half.py").exists()
    skipped = messages_server.requests[1].body["messages"][-1]["content"][0]
    assert skipped["is_error"] and says in skipped["content"] and "may be incomplete" in skipped["content"]


# -- the unknown-tool answer -------------------------------------------------------------------------------


@pytest.mark.system
def test_an_unknown_tool_is_answered_with_every_tool_of_the_turn(project, messages_server, anthropic_settings, turn):
    messages_server.queue(tool_use("bash", {"command": "ls"}), tool_use("submit_output", {"summary": "done"}))
    result = run(turn, anthropic_settings)
    answer = messages_server.requests[1].body["messages"][-1]["content"][0]["content"]
    assert result.ok and "there is no tool 'bash'" in answer
    assert all(name in answer for name in (*result_tools(messages_server), "submit_output"))


def result_tools(server) -> list[str]:
    return [t["name"] for t in server.requests[0].body["tools"]]


@pytest.mark.system
def test_reply_limit_is_what_the_model_is_told(project, messages_server, anthropic_settings, turn):
    messages_server.queue(tool_use("submit_output", {"summary": "done"}))
    run(turn, anthropic_settings)
    system = messages_server.requests[0].body["system"][0]["text"]
    assert f"over {REPLY_MAX_CHARS:,} characters becomes a one-line stub" in system


def test_the_latest_reply_with_thinking_goes_back_whole_while_its_cycle_is_open():
    convo = Conversation("go")
    reply = [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "w" * 20_000},
             {"type": "tool_use", "id": "t1", "name": "write_file", "input": {"path": "a", "content": "c" * 20_000}}]
    convo.add("assistant", [dict(b) for b in reply])
    convo.add("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}])
    assert not convo.prepare() and convo.messages[1]["content"] == reply  # sent back exactly as it came
    convo.add("assistant", [{"type": "text", "text": "next"}])  # a later reply: the earlier one may be stubbed now
    convo.add("user", "go on")
    assert convo.prepare().replies == 2 and convo.messages[1]["content"][0] == reply[0]
