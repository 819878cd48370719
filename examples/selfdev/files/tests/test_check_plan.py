"""check_plan's SDD-mentions-every-unit rule (graphlemon/stages/planner.py, SDD 2)."""

from graphlemon.stages.planner import Drafts, PlanDoc, check_plan

UNIT = {"unit_id": "board", "code": ["snake/board.py"], "tests": ["tests/board"],
        "acceptance_criteria": [{"id": "AC1", "text": "moves one cell", "sdd_section": "3.1"}]}  # fmt: skip


def drafts(sdd: str) -> Drafts:
    plan = PlanDoc.model_validate({"units": [UNIT]})
    return Drafts(docs={"brd": "# BRD", "prd": "# PRD", "sdd": sdd, "benchmark": "# Benchmark"}, plan=plan)


def test_ac1_a_unit_the_sdd_mentions_passes():
    assert check_plan(drafts("# SDD\n## 3.1 Grid\nThe board unit moves the snake.")) == []


def test_ac1_mentioned_unit_is_not_reported_among_other_problems():
    problems = check_plan(drafts("# SDD\n## 9 Other\nThe board unit."))  # a wrong section, but board is mentioned
    assert not any("never mentions" in p for p in problems), problems


def test_ac2_unmentioned_unit_is_rejected():
    problems = check_plan(drafts("# SDD\n## 3.1 Grid\nOnly the grid."))
    assert problems == ["the SDD never mentions unit board"]


def test_ac2_no_sdd_text_rejects_the_unit():
    assert "the SDD never mentions unit board" in check_plan(drafts("# SDD\n## 3.1\n"))
