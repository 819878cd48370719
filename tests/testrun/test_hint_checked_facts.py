"""Issue 46, heldout6's three wrong hints: a hint states only what the output states.

Numbers are quoted as the runner printed them (never re-printed through a binary float); a message is split
into expected/got only where its own structure proves the split; node:assert's actual/expected are its call's
argument positions, sided only by the test's own source.
"""

from __future__ import annotations

from pathlib import Path

from graphlemon.testrun.assertions import compared_in, split_proven
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_messages import go_compared
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.value_types import Numeral, Printed, parse_value

_TAN_E = "0.68351325561491170753499935023939368502774607234006019034769919811202010905597996164029250820702097041244539696"
_TAN_G = "11000098.77937024567134558338516268681898565705351390580203647461936223661960343540226585357100219653146449489295659904"


def _go_failure(*messages: str):
    lines = "".join(f"    decimal_test.go:{2541 + i}: {m}\n" for i, m in enumerate(messages))
    return parse_go_text(f"=== RUN   TestTan\n{lines}--- FAIL: TestTan (0.00s)\nFAIL\n").failures[0]


# 1. numbers kept as printed ------------------------------------------------------------------------------


def test_a_decimal_no_float_holds_is_quoted_as_printed_never_re_rendered():
    failure = _go_failure(f"expected {_TAN_E}, got {_TAN_G}")
    assert (failure.expected, failure.got) == (_TAN_E, _TAN_G)
    text = hint_for(failure).text
    # before: "0.6835132556149117 expected, 11000098.779370246 produced" (binary floats, other digits)
    assert "0.6835132556149117 " not in text and "11000098.779370246" not in text, text
    assert "0.683513255614911707… expected, 11000098.77937024567… produced" in text, text  # excerpts, marked
    assert isinstance(parse_value(_TAN_E, "go"), Printed)  # 110 digits: no float, its kind unknown


def test_a_number_a_float_holds_keeps_its_printed_form():
    for grammar, text in (("go", "1.50"), ("json", "[1.50]"), ("js", "[ 1.50, 1e+21 ]")):
        value = parse_value(text, grammar)
        number = value if grammar == "go" else value[0]
        assert isinstance(number, Numeral) and number == 1.5 and repr(number) == "1.50", (grammar, value)
    assert repr(parse_value("[ 1.50, 1e+21 ]", "js")[1]) == "1e+21"
    text = hint_for(_go_failure("got 1.40, want 1.50")).text
    assert "1.50" in text and "1.40" in text, text


# 2. a message split only where its structure proves it -------------------------------------------------


def test_repeated_expected_got_lines_are_not_split_across_the_line_end():
    failure = _go_failure("expected 0, got 0", "expected 0, got 0", "expected 0, got 0.00")
    assert failure.expected is None and failure.got is None
    text = hint_for(failure).text
    # before: "They differ: 0, got 0 expected, 0 produced" (the split ran across the line end)
    assert "0, got 0 expected" not in text and "«expected 0, got 0 / expected 0, got 0 / expected 0, got 0.00»" in text


def test_a_sentence_with_one_value_per_side_is_still_split():
    assert go_compared("Floor(-0.9): got 0, expected -1") is not None
    found = compared_in('expected "want more", got "less"')  # a quoted literal holds its own words
    assert found is not None and (found.first, found.second) == ('"want more"', '"less"')
    assert not split_proven("0, got 0", "0") and split_proven("'expected'", "3")


# 3. node:assert's argument positions ---------------------------------------------------------------------


def _node_failure(root: Path, call: str) -> object:
    (root / "test.js").write_text(
        "const assert = require('assert');\nfunction check(glob, str) {\n  " + call + ";\n}\ncheck('a', 'b');\n"
    )
    message = (
        "AssertionError [ERR_ASSERTION]: false == true\n"
        f"    at check ({root}/test.js:3:10)\n    at Object.<anonymous> ({root}/test.js:5:1)\n"
        "    at node:internal/main/run_main_module:28:49 {\n  actual: false,\n  expected: true,\n  operator: '=='\n}"
    )
    return make_failure("npm-test: run failed", message=message, detail=message)


def test_nodes_actual_and_expected_are_sided_by_the_tests_source(tmp_path):
    # `assert.equal(false, matches(...))`: the literal is the expectation, node's `actual` is it
    failure = _node_failure(tmp_path, "assert.equal(false, matches(glob).test(str))")
    assert failure.expected is None and failure.got is None  # node alone does not establish the sides
    text = hint_for(failure, tmp_path).text
    assert "(true where false is expected)" in text, text
    # written the usual way round, the same output reads the other way
    failure = _node_failure(tmp_path, "assert.equal(matches(glob).test(str), true)")
    assert "(false where true is expected)" in hint_for(failure, tmp_path).text


def test_nodes_arguments_are_named_as_node_names_them_when_the_source_does_not_say(tmp_path):
    failure = _node_failure(tmp_path, "assert.equal(left, right)")
    text = hint_for(failure, tmp_path).text
    assert "where" not in text and "actual argument false, expected argument true" in text, text
    text = hint_for(failure, None).text  # no source at all
    assert "actual argument false, expected argument true" in text, text
