"""Verdicts on a Python library's integration failure (pytest, no HTTP), code in the integration worktree.

The failure is the one the L2 acceptance test produces (calc: add(mul(-2, 3), mul(3, 4)) == 6 with a
sign bug in mul), in pytest's own words; the SDD, the contracts and the code vary per test.
"""

from __future__ import annotations

import json

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.callfindings import stand_ins
from graphlemon.triage.decider import FACTS_ONLY
from graphlemon.triage.evidence_check import verify_all
from graphlemon.triage.rundir import IntegrationFailure, IntegrationResult, Observation

RUN = "int-t1-r0-a1"
WORKTREE = ".graphlemon/worktrees/t1/_integration"
MESSAGE = "assert 18 == 6\n +  where 18 = add(6, 12)\n +    where 6 = mul(-2, 3)\n +    and   12 = mul(3, 4)"
STACK = (
    "[call]\ndef test_dot_product_of_two_vectors():\n>       assert add(mul(-2, 3), mul(3, 4)) == 6\n"
    + "\n".join(f"E       {line}" for line in MESSAGE.splitlines())
    + "\n\ntests/integration/test_integration.py:6: AssertionError"
)
SIGN_RULE = "\n## 3 Integration\nThe dot product is add(mul(x1, y1), mul(x2, y2)); mul follows the usual sign\nrules, so mul(-2, 3) returns -6.\n"
FORMULAS = "## 2.1 Addition (unit add)\n`add(a, b)` returns a + b.\n\n## 2.2 Multiplication (unit mul)\n`mul(a, b)` returns a * b.\n"
EXAMPLE_ONLY = FORMULAS.replace("`mul(a, b)` returns a * b.", "Multiplies two integers.")  # the example alone
PROSE = "## 2.1 Addition (unit add)\n`add(a, b)` adds two integers.\n\n## 2.2 Multiplication (unit mul)\n`mul(a, b)` multiplies two integers.\n"
MUL = "def mul(a: int, b: int) -> int:\n    if not isinstance(a, int):\n        raise TypeError('mul takes integers')\n    return abs(a) * b\n"
ADD = "def add(a: int, b: int) -> int:\n    return a + b\n"


def calc(
    project,
    sdd: str,
    *,
    mul: str = MUL,
    add: str = ADD,
    message: str = MESSAGE,
    stack: str | None = None,
    contracts: dict | None = None,
):
    state = project.root / ".graphlemon"
    units = [{"unit_id": u, "code": [f"calc/{u}.py"], "tests": [f"tests/{u}"]} for u in ("add", "mul")]
    (state / "units.json").write_text(json.dumps({"units": units}))
    (state / "artifacts" / "sdd").mkdir(parents=True, exist_ok=True)
    (state / "artifacts" / "sdd" / "sdd-v1.md").write_text("# SDD: calc\n\n" + sdd)
    for unit, functions in (contracts or {}).items():
        (state / "units" / unit).mkdir(parents=True, exist_ok=True)
        contract = {"unit_id": unit, "exports": {"functions": functions}}
        (state / "units" / unit / "contract.json").write_text(json.dumps(contract, indent=1))
    code = project.root / WORKTREE / "calc"
    code.mkdir(parents=True, exist_ok=True)
    (code / "mul.py").write_text(mul)
    (code / "add.py").write_text(add)
    failure = IntegrationFailure(
        case="dot-product",
        description="the dot product of (-2, 3) and (3, 4) is 6",
        involves=["add", "mul"],
        expected=Observation(value="6"),
        got=Observation(value="18"),
        message=message,
        stack=stack if stack is not None else STACK.replace(MESSAGE.splitlines()[1], message.splitlines()[1]),
    )
    result = IntegrationResult(run_id=RUN, ok=False, failures=[failure])
    run_dir = state / "integration" / "runs" / RUN
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "result.json").write_text(result.model_dump_json(indent=2))
    return triage_run(project, RUN, code_root=project.root / WORKTREE)


@pytest.fixture
def call_kept(keep):
    """The call mechanisms' verdicts as the decider gives them once kept. Neither is kept today (impl:call right 1
    of 3 times on sets it was not shaped on, impl:call_formula 2 of 12: below even a suggestion): facts for a person."""
    keep("impl:call", "impl:call_formula")


def test_a_call_that_contradicts_an_sdd_example_is_a_fact_for_a_person_while_its_mechanism_is_below_the_bar(project):
    outcome = calc(project, EXAMPLE_ONLY + SIGN_RULE)
    assert (outcome.record.category, outcome.rule, outcome.record.confidence) == ("spec_ambiguous", "facts:only", FACTS_ONLY)
    assert "impl:call suggests impl_bug ['mul'] (mul returns 6 for mul(-2, 3)" in outcome.record.root_cause


def test_a_call_that_contradicts_an_sdd_example_is_the_defining_units_bug(project, call_kept):
    outcome = calc(project, EXAMPLE_ONLY + SIGN_RULE)
    assert (outcome.record.category, outcome.record.affected_units, outcome.record.will_auto_apply) == ("impl_bug", ["mul"], True)
    assert outcome.record.confidence >= 0.5 and outcome.rule == "impl:call"
    assert outcome.record.root_cause.startswith('mul returns 6 for mul(-2, 3) where the SDD ("3 Integration", sdd-v1.md:')
    assert "says -6" in outcome.record.root_cause and "`return abs(a) * b`" in outcome.record.root_cause
    evidence = outcome.record.evidence
    assert verify_all(project.root, evidence).ok and outcome.record.evidence_verified
    assert ".graphlemon/artifacts/sdd/sdd-v1.md:11: mul(-2, 3) returns -6" in evidence
    assert f"{WORKTREE}/calc/mul.py:4: return abs(a) * b" in evidence
    assert any(
        e.startswith(f".graphlemon/integration/runs/{RUN}/result.json:") and e.endswith("where 6 = mul(-2, 3)")
        for e in evidence
    )


def test_a_formula_and_an_example_that_agree_decide_by_the_formula(project, call_kept):
    # the formula is the SDD's general rule, the example one instance of it: the kept impl:call_formula decides,
    # and the example's block, giving the same value, is no doubt about it
    outcome = calc(project, FORMULAS + SIGN_RULE)
    assert (outcome.record.category, outcome.record.affected_units, outcome.rule) == ("impl_bug", ["mul"], "impl:call_formula")
    assert outcome.record.confidence >= 0.8 and outcome.record.will_auto_apply


def test_a_formula_is_evaluated_on_the_observed_arguments(project, call_kept):
    outcome = calc(project, FORMULAS)  # no example: `mul(a, b)` returns a * b → mul(-2, 3) should be -6
    assert (outcome.record.category, outcome.record.affected_units, outcome.rule) == ("impl_bug", ["mul"], "impl:call_formula")
    assert "mul(a, b) returns a * b, i.e. -6" in outcome.record.root_cause and outcome.record.will_auto_apply
    # add(6, 12) = 18 is what `a + b` gives for its own inputs: add is not blamed for mul's wrong value


def test_every_unit_whose_call_contradicts_the_sdd_is_affected(project, call_kept):
    message = MESSAGE.replace("18 == 6", "19 == 6").replace("where 18 = add", "where 19 = add")
    outcome = calc(project, FORMULAS, add="def add(a, b):\n    return a + b + 1\n", message=message)
    assert (outcome.record.category, outcome.record.affected_units) == ("impl_bug", ["mul", "add"])
    assert "add returns 19 for add(6, 12)" in outcome.record.root_cause


def test_an_sdd_silent_about_the_calls_leaves_the_facts_to_a_person(project):
    outcome = calc(project, PROSE)
    assert (outcome.record.category, outcome.record.affected_units, outcome.rule) == ("spec_ambiguous", [], "facts:only")
    assert outcome.record.confidence == FACTS_ONLY and outcome.record.l3_question and not outcome.record.will_auto_apply


def test_an_sdd_that_contradicts_itself_vetoes_the_call_verdict(project):
    outcome = calc(project, FORMULAS + "\n## 4 Notes\nFor speed, mul(-2, 3) returns 6.\n")
    assert (outcome.record.category, outcome.rule) == ("spec_ambiguous", "facts:only")
    assert "The SDD contradicts itself about mul(-2, 3)" in outcome.record.root_cause


def test_a_contract_that_states_what_the_code_does_vetoes_the_units_bug(project):
    # contract:call (the contract agrees with the code, not the SDD) is no kept mechanism: it keeps impl:call from
    # deciding, and the person reads both
    contracts = {
        "mul": [
            {"name": "mul", "signature": "mul(a: int, b: int) -> int", "description": "mul(a, b) returns abs(a) * b"}
        ]
    }
    outcome = calc(project, FORMULAS + SIGN_RULE, contracts=contracts)
    assert (outcome.record.category, outcome.rule) == ("spec_ambiguous", "facts:only")
    assert "contract:call suggests contract_mismatch ['mul']" in outcome.record.root_cause


def test_a_function_two_units_define_is_not_attributed(project):
    outcome = calc(project, FORMULAS + SIGN_RULE, add=ADD + "\n\ndef mul(a, b):\n    return a * b\n")
    assert outcome.record.category == "spec_ambiguous" and outcome.record.affected_units == []


def test_a_case_that_replaces_part_of_the_code_leaves_the_call_below_auto_apply(project, call_kept):
    stack = STACK.replace(
        "def test_dot_product_of_two_vectors():\n",
        "def test_dot_product_of_two_vectors(monkeypatch):\n    monkeypatch.setattr(calc, 'mul', lambda a, b: 6)\n",
    )
    outcome = calc(project, FORMULAS + SIGN_RULE, stack=stack)
    assert (outcome.record.category, outcome.record.affected_units) == ("impl_bug", ["mul"])
    assert outcome.record.confidence < 0.8 and not outcome.record.will_auto_apply
    assert any("monkeypatch.setattr" in h for h in outcome.hints)


def test_a_later_block_of_the_section_that_names_no_call_may_amend_the_example(project, call_kept):
    amended = SIGN_RULE + "\nIn v2 the sign is dropped, so the example above now gives 6.\n"
    outcome = calc(project, FORMULAS + amended)
    assert outcome.record.category == "impl_bug" and outcome.record.confidence < 0.8 and not outcome.record.will_auto_apply
    assert any("may amend it" in h for h in outcome.hints)


def test_stand_ins_are_read_from_the_tests_source():
    stack = "    def test_x(monkeypatch, mocker):\n        monkeypatch.setattr(r, 'f', g)\n        mocker.patch('a.b')\n>       assert f(1) == 2\nE       assert 3 == 2"
    assert stand_ins(stack) == ["monkeypatch.setattr", "mocker.patch"]
    assert stand_ins(STACK) == []
