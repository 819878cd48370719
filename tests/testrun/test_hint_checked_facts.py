"""Issue 46, heldout6's three wrong hints: a hint states only what the output states.

Numbers are quoted as the runner printed them (never re-printed through a binary float); a message is split
into expected/got only where its own structure proves the split; node:assert's actual/expected are its call's
argument positions, sided only by the test's own source.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.assertions import compared_in, split_proven
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_messages import go_compared
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.jest_json import parse_jest_json
from graphlemon.testrun.process import ProcessOutcome
from graphlemon.testrun.reconcile import reconcile
from graphlemon.testrun.result_models import ParsedRun
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


# 4. the strict ones: a type named as its repr shows it, names verbatim, the throw's own place, `complete` ------


def test_a_python_tuple_is_called_a_tuple():
    detail = ">       assert version_info() == '4.1.0'\nE       AssertionError: assert (4, 1, 0) == '4.1.0'"
    text = hint_for(make_failure("t", message="assert (4, 1, 0) == '4.1.0'", detail=detail)).text
    assert "a tuple where a string is expected" in text and "a list" not in text, text


def test_a_jest_test_name_keeps_its_spaces():
    report = {"testResults": [{"name": "/p/index.spec.js", "assertionResults": [
        {"ancestorTitles": ["camel case"], "title": " -> ", "fullName": "camel case  -> ", "status": "failed",
         "failureMessages": ["Error: x"]}]}]}  # fmt: skip
    run = parse_jest_json(json.dumps(report))
    assert [c.name for c in run.cases] == ["camel case >  -> "] and run.failures[0].name == "camel case >  -> "


def test_a_call_thrown_inside_a_dependency_is_placed_there_not_at_the_projects_caller():
    stack = ("TypeError: input.charAt is not a function\n"
             "    at Object.pascalCaseTransform (/p/node_modules/pascal-case/src/index.ts:6:27)\n"
             "    at pascalCaseTransform (/p/src/index.ts:12:10)\n"
             "    at Object.<anonymous> (/p/src/index.spec.ts:40:12)")  # fmt: skip
    failure = make_failure("t", file="src/index.spec.ts", line=40, message=stack.splitlines()[0], detail=stack)
    text = hint_for(failure, Path("/p")).text
    assert "where a dependency calls `.charAt()` on it (at node_modules/pascal-case/src/index.ts:6, reached from " \
        "src/index.ts:12)" in text, text
    own = stack.replace("    at Object.pascalCaseTransform (/p/node_modules/pascal-case/src/index.ts:6:27)\n", "")
    text = hint_for(make_failure("t", file="src/index.spec.ts", line=40, message=own.splitlines()[0], detail=own),
                    Path("/p")).text  # fmt: skip
    assert "where the code calls `.charAt()` on it (at src/index.ts:12)" in text, text


def test_a_failed_run_whose_output_names_no_test_is_not_complete():
    output = "AssertionError [ERR_ASSERTION]: false == true\n    at check (/p/test.js:3:10)\n"
    result = reconcile(ParsedRun(), ProcessOutcome(exit_code=1, duration_ms=10), None, output, framework=None,
                       command="node test.js", timeout=60)  # fmt: skip
    assert (result.summary.passed, result.summary.failed) == (0, 1)
    assert not result.complete and any("names no test" in w for w in result.warnings), result.warnings


@pytest.mark.system
def test_a_plain_node_script_stopping_at_its_first_failed_assert(tmp_path):
    if shutil.which("node") is None:
        pytest.fail("node is not installed: run scripts/install-fixtures.sh (make test does)")
    (tmp_path / "package.json").write_text(json.dumps({"name": "plain", "scripts": {"test": "node test.js"}}))
    (tmp_path / "lib.js").write_text("module.exports = (s) => /a.*/.test(s);\n")
    (tmp_path / "test.js").write_text(
        "const assert = require('assert');\nconst matches = require('./lib');\n"
        "assert.equal(true, matches('abc'));\nassert.equal(false, matches('bcd/a'));\nassert.equal(true, matches('a'));\n"
    )
    result = run_tests(tmp_path, timeout=60)
    assert (result.summary.passed, result.summary.failed) == (0, 1) and not result.complete, result.warnings
    failure = result.failures[0]
    # node's actual/expected are argument positions; the source line `assert.equal(false, matches('bcd/a'))` shows
    # the literal: false is expected, true came out — the JSON says so too (js_source.settle_node_sides)
    assert (failure.expected, failure.got) == ("false", "true")
    assert "(true where false is expected)" in failure.hint, failure.hint


def _node_diff_failure(root: Path, call: str) -> object:
    (root / "t.js").write_text(f"const assert = require('assert');\n{call};\n")
    message = ("AssertionError [ERR_ASSERTION]: Expected values to be strictly deep-equal:\n+ actual - expected\n\n"
               "  {\n+   name: 'ADA'\n-   name: 'Ada'\n  }\n"
               f"    at Object.<anonymous> ({root}/t.js:2:8)\n")  # fmt: skip
    return make_failure("t", message=message, detail=message)


def test_nodes_diff_is_sided_only_by_the_tests_source(tmp_path):
    failure = _node_diff_failure(tmp_path, "assert.deepStrictEqual(load('ada'), { name: 'Ada' })")
    assert "'ADA' where 'Ada' is expected" in hint_for(failure, tmp_path).text
    failure = _node_diff_failure(tmp_path, "assert.deepStrictEqual({ name: 'Ada' }, load('ada'))")
    assert "'Ada' where 'ADA' is expected" in hint_for(failure, tmp_path).text
    text = hint_for(_node_diff_failure(tmp_path, "assert.deepStrictEqual(a, b)"), tmp_path).text
    assert "where" not in text and "actual argument 'ADA', expected argument 'Ada'" in text, text


def test_a_jest_test_name_keeps_its_spaces_in_jests_text_too():
    from graphlemon.testrun.parsers.jest_text import parse_jest_text

    output = ("FAIL dist/index.spec.js\n  camel case\n    ✕  ->  (3 ms)\n\n  ● camel case ›  -> \n\n"
              "    expect(received).toEqual(expected)\n\nTests:       1 failed, 1 total\n")  # fmt: skip
    assert [f.name for f in parse_jest_text(output).failures] == ["camel case >  -> "]


def test_a_literal_against_a_property_read_is_the_expected_one_in_node_tests_tap_stack(tmp_path):
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "a.test.js").write_text("test('t', (t) => {\n  const type = parse('X')\n"
                                                  "  t.assert.deepStrictEqual(type.type, 'x')\n})\n")  # fmt: skip
    error = "Expected values to be strictly deep-equal:\n+ actual - expected\n\n+ 'X'\n- 'x'\n"
    detail = (f"  error: |-\n    {error}  stack: |-\n    assert.<computed> [as deepStrictEqual] "
              f"(node:internal/test_runner/test:242:18)\n    TestContext.<anonymous> ({tmp_path}/test/a.test.js:3:12)\n")
    failure = make_failure("t", file="test/a.test.js", line=1, message=error, detail=detail)
    assert "'X' where 'x' is expected" in hint_for(failure, tmp_path).text


# heldout7's wrong hints -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "detail", "said"),
    [
        ("assert (1, 2) == [1, 2]", ">       assert pair() == [1, 2]", "The same 2 item(s) in the same order"),
        ("AssertionError: () != []", '  File "/p/tests/t.py", line 9, in test_x\n    self.assertEqual(parts(), [])',
         "Both are empty"),
    ],
)
def test_a_sequence_of_another_type_is_said_as_a_type_not_an_order(message, detail, said):
    """`(1, 2) == [1, 2]`, `() != []`: the items (none) are in the same order; the difference is the type."""
    hint = hint_for(make_failure("t", message=message, detail=f"{detail}\nE       {message}")).text
    assert said in hint and "a tuple where a list is expected" in hint and "order," not in hint, hint
    assert "different order" not in hint, hint


@pytest.mark.parametrize("message", ["assert (1, 2) == [1, 2]", "AssertionError: {'a': [1, 2]} != {'a': (1, 2)}"])
def test_a_sequence_type_with_no_side_settled_is_facts(message):
    """pytest's `left`/`right`, unittest's `first`/`second` with no literal to settle which one is expected: "the
    sequence's type differs: first: a list, second: a tuple" claims nothing the values do not show, so the failure
    carries the facts (before: specific; heldout18 addict, whose label says facts)."""
    hint = hint_for(make_failure("t", message=message))
    assert hint.confidence == "facts" and "is expected:" not in hint.text and "where a" not in hint.text, hint
    assert "(the reporter does not say which one is expected)" in hint.text, hint


def test_an_order_is_claimed_only_where_the_items_differ_in_sequence():
    assert "Same items in a different order." in hint_for(make_failure("t", message="assert [2, 1] == [1, 2]")).text
    detail = ">       assert pair() == [1, 2]\nE       AssertionError: assert (2, 1) == [1, 2]"
    tuple_reordered = hint_for(make_failure("t", message="assert (2, 1) == [1, 2]", detail=detail)).text
    assert "different order, and the sequence's type differs: a tuple where a list is expected" in tuple_reordered


# node's uncaught AssertionError, as a plain `node test/basic.js` under `npm test` prints it
_NODE_UNCAUGHT = """
> color-convert@0.5.3 test
> node test/basic.js

node:assert:90
  throw new AssertionError(obj);
  ^

AssertionError [ERR_ASSERTION]: Expected values to be loosely deep-equal:

[
  95,
  47,
  58
]

should loosely deep-equal

[
  96,
  48,
  59
]
    at Object.<anonymous> (/p/test/basic.js:4:8)
    at node:internal/main/run_main_module:28:49 {
  generatedMessage: true,
  code: 'ERR_ASSERTION',
  actual: [ 95, 47, 58 ],
  expected: [ 96, 48, 59 ],
  operator: 'deepEqual'
}

Node.js v20.20.2
"""


def test_nodes_uncaught_assertion_error_gives_both_values_as_argument_positions():
    result = reconcile(ParsedRun(), ProcessOutcome(exit_code=1, duration_ms=10), None, _NODE_UNCAUGHT,
                       framework=None, command="npm test", timeout=60)  # fmt: skip
    (failure,) = result.failures
    assert failure.operands is not None and not failure.operands.sided
    assert (failure.operands.first, failure.operands.second) == ("[ 95, 47, 58 ]", "[ 96, 48, 59 ]")
    hint = hint_for(failure, Path("/p"))
    assert hint.confidence == "facts" and "were not reported" not in hint.text, hint.text
    assert "actual argument: 95, expected argument: 96" in hint.text, hint.text
    assert not result.complete  # the script stopped at its first failed assertion and names no test


def test_a_value_inspect_broke_over_lines_is_not_read_from_nodes_error_properties():
    broken = "  actual: [\n    1,\n    2\n  ],\n  expected: [ 1 ],\n  operator: 'deepEqual'\n}\n"
    assert compared_in(broken) is None


def test_npms_banner_is_not_read_as_the_failing_statement():
    failure = make_failure("npm-test: run failed", message="exited with code 1",
                           detail="> pkg@1.0.0 test\n> node test.js\n\nnode:internal/modules/cjs/loader:1\n")  # fmt: skip
    hint = hint_for(failure).text
    assert "node test.js" not in hint and "were not reported" not in hint, hint


def test_two_nearly_equal_numbers_get_the_size_of_their_difference_not_a_cause():
    """`0.7500000000000001 != 0.75` proves the size of the difference, not where it comes from (rounding)."""
    hint = hint_for(make_failure("TestRatio", message="0.7500000000000001 != 0.75")).text
    assert "differ by 1e-16" in hint and "rounding" not in hint, hint


def test_a_go_timeout_panic_leaves_the_run_not_complete():
    """go's -timeout ends the test binary: whether tests after the stopped one were left unrun is not printed."""
    output = ("=== RUN   Test_Sort1\n--- FAIL: Test_Sort1 (0.00s)\n=== RUN   Test_Sort2\n"
              "panic: test timed out after 5s\nrunning tests:\n\tTest_Sort2 (5s)\n\n"
              "goroutine 7 [running]:\nexample.com/m.Test_Sort2(0xc0)\n\t/src/m/m_test.go:152 +0x1d\n"
              "FAIL\texample.com/m\t5.012s\nFAIL\n")  # fmt: skip
    parsed = parse_go_text(output)
    assert [f.name for f in parsed.failures] == ["Test_Sort1", "Test_Sort2"]
    result = reconcile(parsed, ProcessOutcome(exit_code=1, duration_ms=10), None, output, framework="go",
                       command="go test -v -timeout 5s ./...", timeout=60)  # fmt: skip
    assert not result.complete and any("-timeout (5s) stopped the test binary" in w for w in result.warnings)


def _unittest_failure(root: Path, statement: str) -> object:
    """unittest's report of a failing assertAlmostEqual over two lines: the traceback quotes its first line only."""
    (root / "test_t.py").write_text(f"import unittest\nclass T(unittest.TestCase):\n    def test_t(self):\n{statement}\n")
    first = statement.strip().splitlines()[0]
    message = "AssertionError: 1.8 != 1.75 within 7 places (0.050000000000000044 difference)"
    detail = f'Traceback (most recent call last):\n  File "{root}/test_t.py", line 4, in test_t\n    {first}\n{message}\n'
    return make_failure("test_t.T.test_t", message=message, detail=detail, file="test_t.py", line=4)


def test_a_python_assertion_over_several_lines_is_sided_by_its_whole_statement(tmp_path):
    failure = _unittest_failure(tmp_path, "        self.assertAlmostEqual(parse('1.75 s'),\n                               1.75)")
    assert "1.8 (produced) is 1.75 (expected) rounded" in hint_for(failure, tmp_path).text
    failure = _unittest_failure(tmp_path, "        self.assertAlmostEqual(\n            1.8, parse('1.75 s'))")
    assert "1.8 (expected) is 1.75 (produced) rounded" in hint_for(failure, tmp_path).text  # the literal comes first
    failure = _unittest_failure(tmp_path, "        self.assertAlmostEqual(parse('1.75 s'),\n                               other)")
    text = hint_for(failure, tmp_path).text  # a call and a name that says no side: no side
    assert "1.8 (first) is 1.75 (second) rounded" in text and "expected" not in text, text
