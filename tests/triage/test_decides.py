"""Does the SDD decide the failing case? (decides.py): a statement that covers the case's values decides it;
one that never covers them, or two that cover them both ways, leave it to a person."""

from __future__ import annotations

import pytest

from graphlemon.triage.decides import literals, statements
from graphlemon.triage.evidence_check import verify_all
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

SIZES, SHOP = "sizes", "shoe-shop"
TABLE = "| EU | UK |\n|---|---|\n| `38` | `5` |\n| `42` | `8` |\n| `45` | `10.5` |\n"


def _shoe(tmp_path, *, eu: str, want: str, got: str, sdd_rules: str = TABLE, description: str = ""):
    """A shoe shop converts an EU size to a UK size through the `sizes` library; the case at `eu` failed, a case
    at EU 38 passed."""
    sdd = (
        f"# Shoes\n\n## {SIZES} (Python library)\n\n`uk_size(eu)` converts a European shoe size:\n\n{sdd_rules}\n"
        f'## {SHOP} (FastAPI)\n\n`GET /shoes/{{sku}}/size?eu=NN` answers 200 `{{"eu", "uk"}}`.\n'
    )
    units = [
        {"unit_id": SIZES, "code": ["sizes"], "framework": "python"},
        {"unit_id": SHOP, "code": ["shop"], "depends_on": [SIZES], "framework": "fastapi"},
    ]
    files = {
        "sizes/convert.py": 'TABLE = {"38": "5", "42": "7", "45": "10.5"}\n\ndef uk_size(eu):\n    return TABLE[eu]\n',
        "shop/app.py": "from fastapi import FastAPI\napp = FastAPI()\n",
    }
    url = "http://127.0.0.1:8700/shoes/sk-1/size?eu="
    trace = [
        {"ts": "2026-12-03T10:00:04Z", "case": "eu-38", "step": 0, "unit_id": SHOP, "method": "GET",
         "url": url + "38", "status": 200, "response_body": {"eu": "38", "uk": "5"}},
        {"ts": "2026-12-03T10:00:05Z", "case": f"eu-{eu}", "step": 0, "unit_id": SHOP, "method": "GET",
         "url": url + eu, "status": 200, "response_body": {"eu": eu, "uk": got}},
    ]  # fmt: skip
    failure = {
        "case": f"eu-{eu}", "description": description or "a European size converts to its UK size",
        "involves": [SHOP, SIZES], "request": {"method": "GET", "path": f"/shoes/sk-1/size?eu={eu}"},
        "expected": {"status": 200, "body": {"eu": eu, "uk": want}}, "got": {"status": 200, "body": {"eu": eu, "uk": got}},
    }  # fmt: skip
    p = build_project(tmp_path / "p", units=units, files=files, sdd=sdd, failure=failure, trace=trace)
    return p, classify(load_run(p, RUN_ID))


def test_a_table_row_holding_the_input_and_the_expected_value_decides_for_the_unit_of_its_section(tmp_path):
    p, f = _shoe(tmp_path, eu="42", want="8", got="7")
    assert (f.category, f.affected, f.rule) == ("impl_bug", [SIZES], "impl:sdd_decides")
    assert f.confidence < 0.8  # no trace proves which unit departed
    assert "42" in f.root_cause and any("`42` | `8`" in e for e in f.evidence)  # the input named, the row quoted
    assert verify_all(p.root, f.evidence).ok


def test_an_sdd_that_never_covers_the_input_leaves_it_to_a_person(tmp_path):
    _p, f = _shoe(tmp_path, eu="43", want="9", got="8.5")
    assert f.category == "spec_ambiguous" and f.confidence < 0.6


def test_a_row_that_states_what_the_run_got_does_not_decide_for_the_case(tmp_path):
    rules = TABLE + "\nA `42` runs small: shops sell it as UK `7`.\n"
    _p, f = _shoe(tmp_path, eu="42", want="8", got="7", sdd_rules=rules)
    assert (f.category, f.rule) == ("spec_ambiguous", "spec:contradiction")
    assert f.l3_question and f.confidence < 0.6


def test_a_value_a_passing_case_sent_too_does_not_set_the_failing_case_apart(tmp_path):
    # EU 38 passed with the same value: the row `38` covers nothing that distinguishes the case
    rules = "| EU | UK |\n|---|---|\n| `38` | `5` |\n"
    _p, f = _shoe(tmp_path, eu="44", want="5", got="9.5", sdd_rules=rules, description="size 44 is like 38")
    assert f.category == "spec_ambiguous"


def test_a_bound_in_words_is_no_closed_range():
    assert "12" in literals("children up to 12 years") and "0" not in literals("children up to 12 years")
    from graphlemon.triage.decides import _ranges

    assert _ranges("children up to 12-14 years") == []
    assert [(lo, hi) for lo, hi, _b, _s in _ranges("`day_of_week` 0-7 and 12..14")] == [(0, 7), (12, 14)]
    assert _ranges("on 2026-07-08") == []  # a date is no range


def test_statements_are_paragraphs_list_items_and_table_rows_under_their_unit():
    sdd = "# X\n\n## a\n\nOne `p`.\n\n- item `q`\n\n| k | v |\n|---|---|\n| `r` | 1 |\n\n## b\n\nTwo.\n"
    got = [(s.unit, s.line, sorted(s.spans)) for s in statements([("sdd.md", sdd)], ["a", "b"])]
    assert got == [("a", 5, ["p"]), ("a", 7, ["q"]), ("a", 9, []), ("a", 11, ["r"]), ("b", 15, [])]


@pytest.mark.parametrize(
    "rules",
    [
        "",  # no table at all
        "| EU | UK |\n|---|\n| `42`\n",  # a broken table
        "<table><tr><td>42</td><td>8</td></tr></table>\n",  # markup
        "`42` " * 5000 + "\n",  # a huge paragraph
        "| `42` | `8` | \x00\ufffd |\n",  # control and replacement characters
    ],
)
def test_hostile_sdds_degrade_without_a_confident_verdict(tmp_path, rules):
    p, f = _shoe(tmp_path, eu="42", want="8", got="7", sdd_rules=rules)
    assert f.confidence < 0.8 and verify_all(p.root, f.evidence).ok


def test_a_run_message_with_another_range_than_the_sdds_for_the_same_quantity_is_decided(tmp_path):
    sdd = (
        "# Alarms\n\n## alarm-rules\n\n`parse(spec)` reads `HH:MM@day_of_week`; `day_of_week` 0-7, both 0 and 7 "
        'are Sunday.\n\n## alarm-api\n\n`POST /alarms {"spec"}` answers 201, or 422 when alarm-rules rejects it.\n'
    )
    units = [{"unit_id": "alarm-rules", "code": ["rules"]}, {"unit_id": "alarm-api", "code": ["api"]}]
    failure = {
        "case": "sunday-seven", "description": "an alarm on day 7 is accepted", "involves": ["alarm-api", "alarm-rules"],
        "request": {"method": "POST", "path": "/alarms", "body": {"spec": "06:30@7"}},
        "expected": {"status": 201}, "got": {"status": 422, "body": {"detail": "day_of_week 7 not in 0..6"}},
    }  # fmt: skip
    p = build_project(tmp_path / "p", units=units, files={"rules/r.py": "X = 1\n"}, sdd=sdd, failure=failure)
    f = classify(load_run(p, RUN_ID))
    assert (f.category, f.affected) == ("impl_bug", ["alarm-rules"])
    assert "0-7" in " ".join(f.evidence) and verify_all(p.root, f.evidence).ok


def test_an_input_on_a_bound_in_words_is_left_to_a_person(tmp_path):
    # "up to 42" may or may not include 42: the statement holds the input and the expected value, and decides nothing
    rules = "Sizes up to 42 convert as UK `8`; larger sizes as UK `10.5`.\n"
    _p, f = _shoe(tmp_path, eu="42", want="8", got="10.5", sdd_rules=rules)
    assert f.category == "spec_ambiguous"


def test_a_value_the_description_repeats_from_the_expected_answer_is_no_input(tmp_path):
    # "converts to 8": 8 is the outcome; the only input (43) is one the SDD never mentions
    rules = "| EU | UK |\n|---|---|\n| `38` | `5` |\n| `41` | `8` |\n"
    _p, f = _shoe(tmp_path, eu="43", want="8", got="9", sdd_rules=rules, description="EU 43 converts to 8")
    assert f.category == "spec_ambiguous"
