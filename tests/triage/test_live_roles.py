"""T3, opt-in (`pytest --run-live`, ANTHROPIC_API_KEY): one real turn of each role, and one real triage.

These call the real Messages API and cost money (a few cents per run); they are skipped without
--run-live and never run in CI. They show that the plumbing carries a real model's turn (tools, output
schema, usage), not how good the model is: `make bench-live` measures that.
"""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel

from graphlemon.agents import AgentSettings, build_executor, build_request, run_turn
from graphlemon.triage import triage_run, verify_all

pytestmark = pytest.mark.live
ROLES = ["planner", "coder", "tester", "integrator", "bug-triager", "validator"]


class Echo(BaseModel):
    summary: str


@pytest.fixture
def anthropic_executor():
    if not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.skip("ANTHROPIC_API_KEY is not set")
    return build_executor("anthropic", settings=AgentSettings.from_env())


@pytest.mark.parametrize("role", ROLES)
def test_one_turn_of_each_role_against_the_real_api(scenario, anthropic_executor, role):
    s = scenario("ib01_missing_user_500")
    request = build_request(
        s.project, role, context={"Task": "Read README or any one file, then answer with a one-line summary."},
        run_id=s.run_id, output_model=Echo, tools=["read_file", "list_files"],
    )  # fmt: skip
    result = run_turn(s.project, request, anthropic_executor)
    assert result.ok, result.output_error
    assert Echo.model_validate(result.output).summary and result.usage.total_tokens > 0


def test_a_real_triage_passes_its_self_check_or_falls_back_never_confidently_wrong(scenario, anthropic_executor):
    s = scenario("ib01_missing_user_500")
    outcome = triage_run(s.project, s.run_id, executor=anthropic_executor)
    r = outcome.record
    assert outcome.output.method == "agent" and r.tokens_used > 0
    assert verify_all(s.root, r.evidence).ok
    if r.will_auto_apply:
        assert r.confidence >= 0.8 and r.evidence_verified and not r.fallback
