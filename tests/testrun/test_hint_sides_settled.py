"""Issue 46, heldout15: sides a failure's own output settles — pytest's `where` expansion of a call, a unittest helper's
printed `assertEqual(actual, expected, …` cut at its line end, a Go message's own `returned X, want Y` — each on
constructed runner output, and nothing settled where the premise is absent."""

from __future__ import annotations

from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.node_text import parse_node_text
from graphlemon.testrun.parsers.unittest_text import parse_unittest_text


def _pytest_failure(statement: str, explanation: str):
    detail = f">       {statement}\nE       AssertionError: {explanation}\n\ntest_x.py:9: AssertionError"
    return make_failure("test_x.py::test_it", file="test_x.py", line=9, message=f"AssertionError: {explanation}",
                        detail=detail)  # fmt: skip


def test_pytest_the_call_it_expanded_is_produced_against_the_tests_own_name():
    """`assert plain == bdecode(bencode(plain))` explained `where 0 = bdecode(b'i0e')`: 0 is what the code returned,
    True (the test's own value, not explained) is expected."""
    failure = _pytest_failure(
        "assert plain == bdecode(bencode(plain))",
        "assert True == 0\n +  where 0 = bdecode(b'i0e')\n +    where b'i0e' = bencode(True)",
    )
    assert (failure.expected, failure.got) == ("True", "0")
    assert "where the test expects True" in hint_for(failure).text


def test_pytest_without_an_expansion_or_with_two_calls_settles_nothing():
    no_where = _pytest_failure("assert plain == bdecode(bencode(plain))", "assert True == 0")
    two_calls = _pytest_failure(
        "assert parse(a) == parse(b)", "assert 5 == 6\n +  where 5 = parse('x')\n +  and   6 = parse('y')"
    )
    # the name's value is explained too (an attribute or a call pytest expanded): not the test's own value
    explained = _pytest_failure("assert plain == run(x)", "assert 5 == 6\n +  where 6 = run(1)\n +  where 5 = 5")
    for failure in (no_where, two_calls, explained):
        assert failure.expected is None and failure.got is None
        assert "does not say which one is expected" in hint_for(failure).text


def _unittest_output(call: str, error: str) -> str:
    return (
        "test_x (tests.T.test_x) ... FAIL\n\n" + "=" * 70 + "\nFAIL: test_x (tests.T.test_x)\n" + "-" * 70 + "\n"
        "Traceback (most recent call last):\n"
        '  File "/p/tests.py", line 90, in test_x\n    self.m(hn.initials(), "J. D.", hn)\n'
        f'  File "/p/tests.py", line 47, in m\n    {call}\n{error}\n\n' + "-" * 70 + "\nRan 1 test in 0.001s\n\n"
        "FAILED (failures=1)\n"
    )


def test_unittest_a_helpers_printed_assert_equal_cut_at_its_line_end_settles_the_sides_by_its_names():
    output = _unittest_output("""self.assertEqual(actual, expected, "'%s' != '%s' for '%s'\\n%r" % (""",
                              "AssertionError: 'J; D' != 'J. D.'")  # fmt: skip
    (failure,) = parse_unittest_text(output).failures
    assert (failure.expected, failure.got) == ("'J. D.'", "'J; D'")


def test_unittest_a_cut_call_whose_names_say_nothing_settles_nothing():
    for call in ('self.assertEqual(left, right, "%s" % (', 'self.assertEqual(actual, "%s" % ('):
        (failure,) = parse_unittest_text(_unittest_output(call, "AssertionError: 'J; D' != 'J. D.'")).failures
        assert failure.expected is None and failure.got is None, call


def _go_output(message: str) -> str:
    return (f"=== RUN   TestSanity\n    levenshtein_test.go:30: {message}\n--- FAIL: TestSanity (0.00s)\n"
            "FAIL\nFAIL\texample.com/lev\t0.002s\nFAIL\n")  # fmt: skip


def test_go_returned_x_want_y_names_the_sides_when_each_is_one_whole_value():
    (failure,) = parse_go_text(_go_output('Test[1]: ComputeDistance("hello","") returned 0, want 5')).failures
    assert (failure.expected, failure.got) == ("5", "0")


def test_go_returned_with_more_than_one_value_on_a_side_settles_nothing():
    (failure,) = parse_go_text(_go_output('Test[1]: Split("a b") returned 3 items, want 4')).failures
    assert failure.expected is None and failure.got is None and hint_for(failure).confidence == "facts"


def test_a_dicts_keys_of_another_type_are_said_to_be_there_as_that_type_not_missing():
    """pytest: `Left contains 1 more item: {'title': 'Example'}` / `Right contains 1 more item: {b'title': …}`: the
    result has the key, as a str where bytes are expected."""
    failure = _pytest_failure(
        "assert value == {b'title': b'Example'}",
        "assert {'title': 'Example'} == {b'title': b'Example'}\n  Left contains 1 more item:\n  {'title': 'Example'}\n"
        "  Right contains 1 more item:\n  {b'title': b'Example'}",
    )
    text = hint_for(failure).text
    assert "'title' are there as str where bytes key(s) b'title' are expected" in text and "lacks" not in text, text


def test_keys_that_are_not_the_same_text_in_another_type_are_missing():
    """b'x' has no str twin: the keys are not only of another type, so the missing key is named as missing."""
    failure = _pytest_failure(
        "assert value == {b'title': b'Example', b'x': 1}",
        "assert {'title': 'Example'} == {b'title': b'Example', b'x': 1}",
    )
    text = hint_for(failure).text
    assert "differ only by type" not in text and "lacks key(s) b'title', b'x'" in text, text


def _node_tap_deep_equal(error_lines: list[str]) -> str:
    """node:test's TAP block for a failing deepStrictEqual: a multi-line `error: |-` value, nested expected/actual, then
    the stack whose first frame in the test file is the failing check (line 42; the test is declared at line 7)."""
    return ("TAP version 13\n# Subtest: deps\nnot ok 1 - deps\n  ---\n  duration_ms: 3.9\n"
            "  location: '/p/test/deps.test.js:7:1'\n  failureType: 'testCodeFailure'\n  error: |-\n"
            + "".join(f"    {line}\n" for line in error_lines)
            + "  code: 'ERR_ASSERTION'\n  name: 'AssertionError'\n  expected:\n    a:\n      id: 'a'\n    b:\n"
            "      id: 'b'\n  actual:\n    b:\n      id: 'b'\n  operator: 'deepStrictEqual'\n  stack: |-\n"
            "    TestContext.<anonymous> (/p/test/deps.test.js:42:10)\n"
            "    Test.run (node:internal/test_runner/test:796:25)\n  ...\n1..1\n# tests 1\n# fail 1\n")  # fmt: skip


def test_node_a_multi_line_yaml_value_holding_dots_is_read_whole_and_its_stack_frame_after_it():
    """node's diff skips lines with a `...` line of its own, inside the block scalar: it does not end the YAML block
    (its `...` is at the `---` line's indentation), so the stack after it places the failure at its check."""
    lines = ["Expected values to be strictly deep-equal:", "+ actual - expected ... Lines skipped", "", "  {",
             "-   a: {", "-     id: 'a'", "-   },", "    b: {", "...", "    }", "  }"]  # fmt: skip
    (failure,) = parse_node_text(_node_tap_deep_equal(lines)).failures
    assert (failure.file, failure.line, failure.declared) == ("/p/test/deps.test.js", 42, False)
    assert failure.expected is not None and failure.got is not None
    assert "the test declared at" not in hint_for(failure).text


def test_node_a_block_without_a_stack_frame_in_the_test_file_stays_at_the_declaration():
    output = _node_tap_deep_equal(["Expected values to be strictly deep-equal:", "..."]).replace(
        "TestContext.<anonymous> (/p/test/deps.test.js:42:10)", "helper (/p/lib/check.js:5:3)"
    )
    (failure,) = parse_node_text(output).failures
    assert (failure.line, failure.declared) == (7, True)
