"""Turn and context budgets on the anthropic backend, against the fake Messages server: a reply cut at
max_tokens, a 'prompt is too long' answer, text-only replies, the turn countdown, capped and cleared tool
results; and a coder that runs out of turns is tested as an attempt."""

from __future__ import annotations

import pytest
from fakes.messages_server import error, text, tool_use, tool_uses
from pydantic import BaseModel

from graphlemon.agents import AgentResult, Limits, build_executor
from graphlemon.agents.context import CLEARED, Conversation, cap_result


class Out(BaseModel):
    summary: str


def last_user(request) -> list:
    content = request.body["messages"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


@pytest.mark.system
def test_a_reply_cut_at_max_tokens_does_not_run_its_last_call_and_says_so(
    project, messages_server, anthropic_settings, turn
):
    cut = tool_uses([("write_file", {"path": "tests/a.py", "content": "A = 1\n"}),
                     ("write_file", {"path": "tests/b.py", "content": "B = [1, 2,"})])  # fmt: skip
    cut.stop_reason = "max_tokens"
    messages_server.queue(cut, tool_use("submit_output", {"summary": "a written"}))
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Out)
    assert result.ok and (project.root / "tests/a.py").exists() and not (project.root / "tests/b.py").exists()
    first, second = last_user(messages_server.requests[1])
    assert "is_error" not in first and second["is_error"] and "cut at the output limit" in second["content"]
    assert "smaller steps" in second["content"]


@pytest.mark.system
def test_a_prompt_too_long_answer_clears_old_tool_results_and_is_sent_again(
    project, messages_server, anthropic_settings, turn
):
    (project.root / "big.txt").write_text("y" * 15_000 + "\n")
    (project.root / "big2.txt").write_text("y" * 15_000 + "\n")
    messages_server.queue(
        tool_use("read_file", {"path": "big.txt"}),
        tool_use("read_file", {"path": "big2.txt"}),
        error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        tool_use("submit_output", {"summary": "read it"}),
    )
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Out)
    assert result.ok and len(messages_server.requests) == 4
    retried = messages_server.requests[3].body["messages"]
    results = [
        b for m in retried if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert [r["content"] for r in results[:-1]] == [CLEARED] and "yyyy" in results[-1]["content"]


@pytest.mark.system
def test_a_text_only_reply_is_told_to_use_the_tools_and_the_countdown_runs_to_the_last_call(
    project, messages_server, anthropic_settings, turn
):
    messages_server.queue(text("Let me think about the tests."), *[tool_use("list_files", {}) for _ in range(3)])
    result = turn(build_executor("anthropic", settings=anthropic_settings), "tester", output_model=Out,
                  limits=Limits(max_turns=4))  # fmt: skip
    assert result.stop_reason == "max_turns" and "4 model calls" in result.output_error
    nudge = last_user(messages_server.requests[1])[0]["text"]
    assert "called no tool" in nudge and "Nobody reads text" in nudge and "3 model calls left" in nudge
    assert "2 model calls left" in last_user(messages_server.requests[2])[-1]["text"]
    assert "last model call" in last_user(messages_server.requests[3])[-1]["text"]


def test_tool_results_are_capped_and_cleared_in_one_batch():
    assert cap_result("x" * 100) == "x" * 100
    capped = cap_result("a" * 30_000 + "z" * 10_000)
    assert len(capped) < 16_400 and capped.startswith("a" * 100) and capped.endswith("z" * 100)
    convo = Conversation("go")
    for i in range(10):
        convo.add("assistant", [{"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {}}])
        convo.add("user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 15_000}])
    assert convo.clear_old(keep=6) == 4 and convo.clear_old(keep=6) == 0  # 90k left: under the threshold
    contents = [m["content"][0]["content"] for m in convo.messages[2::2]]
    assert contents[:4] == [CLEARED] * 4 and contents[4:] == ["r" * 15_000] * 6


def test_a_coder_out_of_turns_is_an_attempt_to_test(project):
    from graphlemon.models import TimelineEvent
    from graphlemon.stages.coder import _coder_answer
    from graphlemon.stages.session import LoopSession
    from graphlemon.taskboard import TaskBoard

    task = TaskBoard(project.ledger).create("x")
    session = LoopSession(project, task.task_id)
    ran_out = AgentResult(executor="anthropic", role="coder", stop_reason="max_turns", unit_id="u1",
                          files_changed=["snake/board.py"], turns=50)  # fmt: skip
    answer = _coder_answer(session, ran_out, "ne-1", 1)
    assert answer.files == ["snake/board.py"] and "max_turns" in answer.summary
    assert [e.event for e in project.ledger.read_as("timeline", TimelineEvent)] == ["coder_out_of_turns"]
    refused = AgentResult(executor="anthropic", role="coder", stop_reason="output_invalid", output_error="refusal")
    try:
        _coder_answer(session, refused, "ne-1", 1)
    except Exception as exc:  # noqa: BLE001 - the one error a stage raises for an unusable turn
        assert getattr(exc, "code", None) == "OUTPUT_INVALID" and "refusal" in str(exc)
    else:
        raise AssertionError("a refused coder turn must fail the stage")


def test_the_previous_attempt_gives_the_coder_message_stack_hint_and_crash_reason():
    from graphlemon.models import TestSummary
    from graphlemon.stages.tester import TesterFailure, TesterOutput
    from graphlemon.stages.tester import hints_for_coder as _feedback

    failure = TesterFailure(test="tests/test_c.py::test_ac1_wall", file="tests/test_c.py", line=9, expected=True,
                            got=False, message="assert False is True", stack="x" * 5000 + "collision.py:9: in hits_wall",
                            hint="compare y >= height", bug_id="bug-1")  # fmt: skip
    out = TesterOutput(ok=False, mode="test", unit_id="c", run_id="r", result_ref="r.json", next_action="retry_coder",
                       summary=TestSummary(total=1, failed=1), failures=[failure], acceptance_coverage=1,
                       contract_coverage=1)  # fmt: skip
    text = _feedback(out)
    assert "test tests/test_c.py::test_ac1_wall (tests/test_c.py:9), bug bug-1" in text
    assert "expected True, got False" in text and "message: assert False is True" in text
    assert "collision.py:9: in hits_wall" in text and len(text) < 2500 and "hint: compare y >= height" in text
    crashed = out.model_copy(update={"crashed": True, "failures": []})
    assert "could not run: SyntaxError in snake/c.py line 3" in _feedback(crashed, "SyntaxError in snake/c.py line 3")
