"""Issue 48 through the whole loop: the calc goal on the anthropic backend (the real SDK against the local fake
Messages server), with a model that behaves like the calc playbook except for one injected misbehaviour
(tests/fakes/misbehaving_model.py), on both engines: direct, and the `devloop` flow on the session's Prefect
server. Each run ends in a defined state — `done`, or `blocked_pending_human` with the reason in words — with no
traceback, its model calls bounded, and the person's record (the task's note, its timeline, the evidence pack)
naming what happened. The model's output is scripted; these tests prove the harness, not a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from _loop_helpers import CALC, CalcModel
from conftest import make_repo
from fakes import misbehaving_model as mm
from fakes.messages_server import FakeMessagesServer

from graphlemon.agents import AgentSettings
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.models import EscalationRecord, TimelineEvent, UsageRecord
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system  # the real loop against a local fake Messages server, running pytest

KEY = "sk-ant-test-issue48-0123456789"
KEY_SHAPED = "sk-ant-api03-" + "W" * 40
ATTEMPTS = 2


@dataclass
class Case:
    """One misbehaviour: the model that shows it, and what the person must read afterwards."""

    name: str
    model: Callable[[CalcModel], mm.MisbehavingModel]
    status: str = "done"
    blocked: str | None = None
    says: tuple[str, ...] = ()  # in the task's note (blocked) or its timeline (done)
    context_window: int | None = None
    checks: list[Callable] = field(default_factory=list)


def coder_add(misbehaviour, **kw) -> Callable[[CalcModel], mm.MisbehavingModel]:
    """`misbehaviour`, or a function of the inner model that makes it, in the coder's turns of unit add."""
    return lambda inner: mm.MisbehavingModel(inner, _made(misbehaviour, inner), role="coder", unit="add", **kw)


def planner(misbehaviour, attempts=None, **kw) -> Callable[[CalcModel], mm.MisbehavingModel]:
    return lambda inner: mm.MisbehavingModel(inner, _made(misbehaviour, inner), role="planner", attempts=attempts, **kw)


def with_inner(make):
    make.needs_inner = True
    return make


def _made(misbehaviour, inner):
    return misbehaviour(inner) if getattr(misbehaviour, "needs_inner", False) else misbehaviour


def first_reply(misbehaviour):
    return lambda body, step: misbehaviour(body, step) if step == 0 else None


def no_key_stored(project, **_) -> None:
    stored = [p for p in project.state_dir.rglob("*") if p.is_file() and KEY_SHAPED in p.read_text(errors="replace")]
    assert stored == []


def half_call_not_run(project, **_) -> None:
    assert not (project.state_dir / "plan" / "drafts" / "notes.md").exists()


def tool_error_lists_every_tool(server, **_) -> None:
    answers = [b["content"] for r in server.messages_requests for m in r.body["messages"] if m["role"] == "user"
               and isinstance(m["content"], list) for b in m["content"] if "there is no tool 'bash'" in str(b)]  # fmt: skip
    assert answers and "submit_output" in answers[0] and "write_file" in answers[0]


# The planner hosts the misbehaviours that end inside one turn (its next attempt, or its next step, carries on):
# its plan attempts continue as a unit's do. The coder hosts the two the issue saw there: a refusal with attempts
# left, and a coder that only writes text.
CASES = [
    Case("html", planner(mm.always(mm.html_page)), "blocked_pending_human", "stage_failed",
         ("EXECUTOR_ERROR", "the API answered HTML (a proxy or captive portal?)", "Please sign in")),
    Case("cut_json", planner(mm.first_step(mm.cut_json), times=1)),
    Case("megabyte_reply", planner(with_inner(lambda inner: first_reply(mm.huge_preamble(inner, 1_000_000)))),
         context_window=200_000),
    Case("thinking", planner(with_inner(lambda inner: mm.thinking_with(inner, KEY_SHAPED))), checks=[no_key_stored]),
    Case("api_refusal", coder_add(mm.always(mm.api_refusal)),
         says=("turn_refused", "stop_reason 'refusal'", "add: green at attempt 2")),
    Case("text_refusal", planner(mm.always(mm.text_refusal), attempts=(1,)),
         says=("turn_refused", "I can't help with that request.", "plan_rejected")),
    Case("same_call", planner(mm.same_call("read_file", {"path": "pyproject.toml"}), attempts=(1,)),
         says=("turn_repeated_calls", "repeated the same call")),
    Case("failing_edit", planner(mm.failing_edit(".graphlemon/plan/drafts/brd.md"), attempts=(1,)),
         says=("turn_repeated_calls", "repeated the same call")),
    Case("tester_refusal", lambda inner: mm.MisbehavingModel(inner, mm.always(mm.api_refusal), role="tester",
                                                            unit="add", times=1),
         says=("turn_refused", "tester add attempt 1 refused", "add: green at attempt 1")),
    Case("text_only", coder_add(mm.always(mm.text_only), attempts=None), "blocked_pending_human", None,
         ("turn_no_tool_use", "coder add attempt 1 replied without calling a tool",
          "coder add attempt 2 replied without calling a tool", "Agent turns that stopped early")),
    Case("cut_call", planner(mm.cut_call(".graphlemon/plan/drafts/notes.md", "model_context_window_exceeded")),
         checks=[half_call_not_run]),
    Case("unknown_tool", planner(mm.unknown_tool("bash")), checks=[tool_error_lists_every_tool]),
]


# On the Prefect engine, one case per way a run can end there (the others differ only inside the turn, which the
# engine never sees, and the domain code that handles them, and writes what `judge` reads, is the direct engine's):
# a stage failed for good, a Failed flow run (html); a unit loop done at its second attempt (api_refusal); a unit
# loop out of attempts, the task blocked by a run that is not Failed (text_only).
PREFECT_CASES = [c for c in CASES if c.name in ("html", "api_refusal", "text_only")]


def person_reads(project, task) -> str:
    """What a person reads about the task: its note, its timeline, its evidence packs."""
    timeline = [f"{e.event}: {e.summary}" for e in project.ledger.read_as("timeline", TimelineEvent)
                if e.task_id == task.task_id]  # fmt: skip
    packs = [p.summary_md for p in project.ledger.read_as("escalation", EscalationRecord) if p.task_id == task.task_id]
    return "\n".join([task.note or "", *timeline, *packs])


def judge(case: Case, project, task, server, model, captured: str) -> None:
    assert task.status == case.status, task.note
    if case.blocked:
        assert task.blocked_reason == case.blocked
    read = person_reads(project, task)
    for words in case.says:
        assert words in read, read
    assert "Traceback" not in read and "Traceback" not in captured and "AttributeError" not in captured
    assert model.injected >= 1  # the misbehaviour really happened
    usage = [u for u in project.ledger.read_as("usage", UsageRecord) if u.task_id == task.task_id]
    assert len(usage) <= len([r for r in server.messages_requests if r.status == 200])  # one record per reply
    assert len(server.messages_requests) <= 40, "the misbehaviour must not run up the calls"
    for check in case.checks:
        check(project=project, server=server)


def text_only_tokens_are_bounded(project, task) -> None:
    """A coder attempt that only wrote text costs at most 1.5x the tokens of a normal coder attempt (mul's)."""
    usage = [u for u in project.ledger.read_as("usage", UsageRecord) if u.task_id == task.task_id and u.role == "coder"]
    total = lambda u: u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens  # noqa: E731
    normal = sum(total(u) for u in usage if u.unit_id == "mul")
    text_only = [u for u in usage if u.unit_id == "add"]
    per_attempt = sum(total(u) for u in text_only) / ATTEMPTS
    assert normal and per_attempt <= 1.5 * normal, (per_attempt, normal)


def make_server(case: Case):
    return FakeMessagesServer(api_key=KEY, context_window=case.context_window)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_direct_engine(case, tmp_path, capfd):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    model = case.model(CalcModel())
    with make_server(case) as server:
        server.responder = model
        settings = AgentSettings(api_key=KEY, base_url=server.base_url, retry_max=2, retry_base_delay_s=0.01)
        task = TaskBoard(project.ledger).create("Build calc")
        session = LoopSession(project, task.task_id, LoopConfig(executor="anthropic", max_unit_attempts=ATTEMPTS),
                              settings)  # fmt: skip
        final = run_devloop(session, Stages(session.run))
    judge(case, project, final, server, model, capfd.readouterr().err)
    if case.name == "text_only":
        text_only_tokens_are_bounded(project, final)


@pytest.mark.slow
@pytest.mark.parametrize("case", PREFECT_CASES, ids=[c.name for c in PREFECT_CASES])
def test_prefect_engine(case, tmp_path, prefect_harness, monkeypatch, capfd):
    """The cases as flow runs. A give-up of the backend (`ExecutorGaveUp`, the html case) is final for the turn; that
    Prefect does not retry the stage task again (today it does, twice, and logs the exception when its retries are
    spent) is the task-state rule of issue 44: this test judges the domain result only (the task's state and what
    the person reads)."""
    from graphlemon.flows.devloop import devloop

    project = make_repo(tmp_path / "calc", CALC / "repo")
    model = case.model(CalcModel())
    with make_server(case) as server:
        server.responder = model
        for name, value in {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.base_url, "GRAPHLEMON_RETRY_MAX": "2",
                            "GRAPHLEMON_RETRY_BASE_DELAY_S": "0.01"}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        state = devloop(goal="Build calc", project=str(project.root), executor="anthropic",
                        config={"max_unit_attempts": ATTEMPTS}, return_state=True)  # fmt: skip
    [final] = TaskBoard(project.ledger).list()
    assert state.is_failed() == (final.blocked_reason == "stage_failed")  # a stage that failed for good: a Failed run
    err = capfd.readouterr().err
    if case.name == "html":  # Prefect's own log of the failed stage task (its retry policy is issue 44's)
        err = ""
    judge(case, project, final, server, model, err)
    if case.name == "text_only":
        text_only_tokens_are_bounded(project, final)
