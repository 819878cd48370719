"""Issue 46, heldout8's wrong and vague hints: a value is read with its reporter's grammar, or not claimed.

tape's YAML values on the lines below their key, Go's `%q` literals around `!=` and an Example's got:/want:
blocks, jest's last failure block (not its run summary), pytest's explanation of a method check, an object as
the runner printed it, and two facts a reader cannot see (a look-alike character, two parts swapped).
"""

from __future__ import annotations

import json
import unittest

from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_json import parse_go_json
from graphlemon.testrun.parsers.go_messages import go_compared
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.jest_text import parse_jest_text
from graphlemon.testrun.parsers.tap import parse_tap, tape_block
from graphlemon.testrun.value_types import go_unquote, parse_value

# 1. tape's YAML: a value on the indented lines below its key -------------------------------------------------

_TAPE = """TAP version 13
# cmp
not ok 1 should be equivalent
  ---
    operator: deepEqual
    expected:
      [ '1.2.3', '1.5.5', '1.5.19', '2.3.1' ]
    actual:
      [ '1.2.3', '1.5.19', '1.5.5', '2.3.1' ]
    at: Test.<anonymous> (/p/test/cmp.js:18:7)
  ...

1..1
# tests 1
# pass  0
# fail  1
"""


def test_a_tape_value_below_its_key_is_read_not_taken_for_an_empty_string():
    failure = parse_tap(_TAPE).failures[0]
    assert failure.expected == "[ '1.2.3', '1.5.5', '1.5.19', '2.3.1' ]"
    assert failure.got == "[ '1.2.3', '1.5.19', '1.5.5', '2.3.1' ]"
    assert (failure.file, failure.line) == ("/p/test/cmp.js", 18)
    hint = hint_for(failure)
    # before: "They differ from character 1:  expected,  produced." (two empty strings)
    assert hint.confidence == "specific" and "different order" in hint.text, hint
    assert " expected,  produced" not in hint.text


def test_tape_block_forms_a_block_scalar_an_indented_value_and_no_value():
    raw = "operator: equal\nexpected: |-\n  'a\n  b'\nactual:\n  'c'\nat: x (/p/t.js:1:1)\nmessage:\n"
    block = tape_block(raw)
    assert block["expected"] == "'a\nb'" and block["actual"] == "'c'"
    assert "message" not in block  # a key with no value is YAML's null, not an empty string
    assert tape_block("operator: equal\nexpected: |-\nactual: ''\nat: x\n")["expected"] == ""  # an empty block scalar


# 2. Go: `%q` literals around `!=`, an Example's got:/want: ---------------------------------------------------


def _go(message_lines: str) -> str:
    return f"=== RUN   TestIndent\n{message_lines}--- FAIL: TestIndent (0.00s)\nFAIL\n"


def test_a_go_quoted_pair_is_two_whole_literals_never_the_tests_words():
    out = _go('    indent_test.go:29: mismatch "xxA\\nxxB\\nxx\\nxxC" != "xxA\\nxxB\\n\\nxxC"\n')
    failure = parse_go_text(out).failures[0]
    ops = failure.operands
    assert ops is not None and not ops.sided and ops.labels == ("first", "second")
    assert (ops.first, ops.second) == ('"xxA\\nxxB\\nxx\\nxxC"', '"xxA\\nxxB\\n\\nxxC"')
    assert parse_value(ops.first, "go") == "xxA\nxxB\nxx\nxxC"  # Go's escapes, unquoted
    text = hint_for(failure).text
    # before: 'first: mismatch "xxA…' and "from character 1"
    assert "mismatch" not in text and "from character 9 (line 3, column 1) " in text, text
    assert "first" in text and "second" in text and "expected" not in text.replace("is expected", ""), text


def test_a_quoted_pair_is_read_in_the_first_message_only_and_not_when_side_words_say_more():
    out = _go('    x_test.go:1: mismatch "ab" != "ax"\n    x_test.go:2: mismatch "q" != "r"\n')
    ops = parse_go_text(out).failures[0].operands
    assert ops is not None and (ops.first, ops.second) == ('"ab"', '"ax"')
    found = go_compared('got "a" != "b", want equal')  # side words outside the literals: not this reader's
    assert found is None or found.labels != ("first", "second")
    assert go_compared('"a" != "b" != "c"') is None  # where a value ends is not certain
    assert go_compared("mismatch 5 != 6") is None and go_compared("5 != 6") is not None


def test_go_unquote_reads_gos_escapes_and_refuses_what_is_not_one_literal():
    assert go_unquote('"a\\tb\\x41\\u00e9\\U0001F600\\101\\\\\\""') == 'a\tbAé😀A\\"'
    assert go_unquote('"a" and "b"') is None and go_unquote('"\\xff"') is None and go_unquote('"\\q"') is None
    assert parse_value("`raw \\n`", "go") == "raw \\n"


_EXAMPLE_TEXT = """=== RUN   ExampleCause
--- FAIL: ExampleCause (0.00s)
got:
error : inner
error
want:
inner: error
error
=== RUN   ExampleNew
--- PASS: ExampleNew (0.00s)
FAIL
"""


def test_an_example_tests_got_and_want_blocks_are_its_sides_text_and_json():
    failure = parse_go_text(_EXAMPLE_TEXT).failures[0]
    assert (failure.expected, failure.got) == ("inner: error\nerror", "error : inner\nerror")
    events = [{"Action": "run", "Package": "m", "Test": "ExampleCause"}]
    events += [{"Action": "output", "Package": "m", "Test": "ExampleCause", "Output": line + "\n"}
               for line in _EXAMPLE_TEXT.splitlines()[:8]]  # fmt: skip
    events += [{"Action": "fail", "Package": "m", "Test": "ExampleCause"}, {"Action": "fail", "Package": "m"}]
    failure = parse_go_json("\n".join(json.dumps(e) for e in events), module="m").failures[0]
    # before: the first four body lines only (`want:` block cut to nothing)
    assert (failure.expected, failure.got) == ("inner: error\nerror", "error : inner\nerror")


# 3. jest's last failure block ends at its run summary --------------------------------------------------------

_JEST = """FAIL dist/index.spec.js
  ● case › a

    expect(received).toEqual(expected) // deep equality

    Expected: "Version 1"
    Received: "Versi\u043en 1"

      at Object.toEqual (src/index.spec.ts:16:35)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 passed, 2 total
Snapshots:   0 total
Time:        0.302 s
Ran all test suites.
"""


def test_jests_last_failure_keeps_its_own_block_and_a_look_alike_is_named_by_code_point():
    failure = parse_jest_text(_JEST).failures[0]
    assert "Tests:" not in failure.message and failure.got == '"Versi\u043en 1"', failure.message
    text = hint_for(failure).text
    assert "U+043E CYRILLIC SMALL LETTER O" in text and "U+006F LATIN SMALL LETTER O" in text, text


# 4. pytest's explanation of a method check; an object as printed -------------------------------------------

_STARTSWITH = """assert False
 +  where False = <built-in method startswith of str object at 0x7f0d>('Unable to parse date string')
 +    where <built-in method startswith of str object at 0x7f0d> = "Date string '23' not parsed".startswith
 +      where "Date string '23' not parsed" = str(ParseError("Date string '23' not parsed"))"""


def test_a_method_check_is_named_with_its_receiver_and_argument():
    failure = make_failure("t::test_x", file="t.py", line=3, message=_STARTSWITH, detail=_STARTSWITH)
    text = hint_for(failure).text
    # before: "`str(ParseError(…))` returned …" (what the receiver was, not what was checked)
    assert "`\"Date string '23' not parsed\".startswith('Unable to parse date string')` returned False" in text, text


def test_an_object_is_shown_as_the_runner_printed_it_never_as_graphlemons_own_fields():
    e = "datetime.datetime(2007, 1, 1, 8, 0, tzinfo=datetime.timezone(datetime.timedelta(seconds=7200), 'x'))"
    g = "datetime.datetime(2007, 1, 1, 8, 0, tzinfo=datetime.timezone.utc)"
    assert repr(parse_value(e, "python")) == e
    assert repr(parse_value("Item { a: 1, b: 'x' }", "js")) == "Item { a: 1, b: 'x' }"
    assert repr(parse_value("<pkg.Item object at 0x7f00>", "python")) == "<pkg.Item object at 0x7f00>"
    failure = make_failure("t::test_x", file="t.py", line=3, message=f"assert {g} == {e}", detail="")
    text = hint_for(failure).text
    assert "Obj(" not in text and "fields=" not in text and "datetime.datetime(2007, 1, 1, 8, 0, tzinfo=" in text


# 5. two parts swapped; absence in the test's language -------------------------------------------------------


def test_two_parts_swapped_around_a_separator_are_named_and_one_split_only():
    failure = _go_failure("Wrap(EOF): got: EOF: read error, want read error: EOF")
    text = hint_for(failure).text
    assert text.startswith("The two parts come in the other order: 'EOF' then 'read error'"), text
    text = hint_for(_go_failure("got: whoops : oh noes, want oh noes: whoops")).text
    assert "joined by ' : ' where ': ' is expected" in text, text
    text = hint_for(_go_failure("got: a: b: a, want a: b: a: b")).text  # no single split: no claim of one
    assert "other order" not in text, text


def test_go_absence_is_called_nil():
    text = hint_for(_go_failure('Unwrap() error = <nil>, want "test"')).text
    assert "(nil)" in text and "None" not in text, text
    text = hint_for(_go_failure("Unwrap() error = <nil>, want test")).text  # against printed text: `<nil>` as printed
    assert "<nil> produced" in text and "None" not in text and "(nil)" not in text, text


def _go_failure(message: str):
    return parse_go_text(f"=== RUN   TestX\n    x_test.go:5: {message}\n--- FAIL: TestX (0.00s)\nFAIL\n").failures[0]


def test_a_str_and_its_bytes_are_named_as_such_either_way():
    from graphlemon.testrun.hint_values import pair_of, value_hint

    unsided = value_hint(pair_of("'xn--a.b'", "b'xn--a.b'", "python", ("first", "second")))
    assert unsided is not None and "as a str in the first value and as bytes in the second" in unsided
    assert "came back as bytes where a str is expected" in (value_hint(pair_of("'abc'", "b'abc'", "python")) or "")
    assert "same text" not in (value_hint(pair_of("'abd'", "b'abc'", "python")) or "")  # another text: not this rule


# pytest's containment check: both operands printed --------------------------------------------------------

_IN_CHECK = ("assert 'Error(func=between' in \"Error(func=<function between at 0x7f28>, args={'value': 3})\"\n"
             " +  where \"Error(func=<function between at 0x7f28>, args={'value': 3})\" = repr(Error(func=<function "
             "between at 0x7f28>, args={'value': 3}))")  # fmt: skip


def _pytest_check(statement: str, message: str) -> object:
    detail = f">       {statement}\nE       " + message.replace("\n", "\nE       ") + "\n\ntests/test_x.py:9: AssertionError"
    return make_failure("tests/test_x.py::test_it", file="tests/test_x.py", line=9, message=message, detail=detail)


def test_a_containment_check_pytest_printed_is_quoted_not_called_unreported():
    """`assert a in b`: no rule over two values reads it, but pytest printed both operands — the facts quote them
    (before: "the values it checks were not reported")."""
    hint = hint_for(_pytest_check("assert wanted in repr(err)", _IN_CHECK))
    assert hint.confidence == "facts" and "were not reported" not in hint.text, hint
    assert "pytest printed its operands: «assert 'Error(func=between' in \"Error(func=<function between" in hint.text
    # a bare truth value printed (`assert <value>`) is no comparison: still "not reported"
    bare = hint_for(_pytest_check("assert check(x)", "assert <m.Result object at 0x1>"))
    assert "were not reported" in bare.text and "pytest printed its operands" not in bare.text, bare


# tape: a value holding raw Unicode line and paragraph separators ---------------------------------------------

_TAPE_SEPARATORS = (
    "TAP version 13\n# trims\nnot ok 1 all whitespace is trimmed\n  ---\n    operator: equal\n    expected: 'a'\n"
    "    actual:   '\\n\\x0B\\f\\r \u00a0\u2028\u2029\u0085\u3000a'\n    at: Test.<anonymous> (/p/test/t.js:11:6)\n"
    "  ...\n\n1..1\n# tests 1\n# pass  0\n# fail  1\n"
)


def test_a_tape_value_with_raw_unicode_separators_is_one_line_of_its_block():
    """U+2028, U+2029, U+0085 printed raw inside a value are the value's characters, not TAP line ends (before: the
    block was cut there, and the failure lost its file, line and values)."""
    (failure,) = parse_tap(_TAPE_SEPARATORS).failures
    assert (failure.file, failure.line, failure.expected) == ("/p/test/t.js", 11, "'a'"), failure
    assert failure.got == "'\\n\\x0B\\f\\r \u00a0\u2028\u2029\u0085\u3000a'"
    # object-inspect's escapes read as JavaScript's: `\x0B` a vertical tab, `\f` a form feed (never `x0B`, `f`)
    assert parse_value(failure.got, "js") == "\n\x0b\x0c\r \u00a0\u2028\u2029\u0085\u3000a"
    hint = hint_for(failure)  # every character added is whitespace: the whitespace rule reads them all
    assert hint.confidence == "specific" and "differs only in whitespace" in hint.text, hint
    assert "'\\n\\x0b\\x0c\\r \\xa0\\u2028\\u2029\\x85\\u3000a' where 'a' is expected" in hint.text, hint


# unittest: two abbreviated multi-line strings, read whole from its ndiff ------------------------------------


def _unittest_message(first: str, second: str) -> str:
    """unittest's own message for assertEqual(first, second) (its abbreviation and its ndiff of the lines)."""
    try:
        unittest.TestCase().assertEqual(first, second)
    except AssertionError as error:
        return f"AssertionError: {error}"
    raise AssertionError("the two texts are equal")


def test_abbreviated_multi_line_strings_are_read_whole_from_unittests_ndiff():
    """A last line without a line end runs into the next ndiff line (`- </a>+  </a>? +`): the reading whose reprs
    both abbreviations shorten is the only one taken (before: "abbreviated, so they are not known")."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', "<a>", "....<b>", "........<c>1</c>", "........<c>2</c>"]
    first = "\n".join([*lines, "....</b>", "....<b>3</b>", "</a>"])
    second = "\n".join([*lines, ".... </b>", "....<b>3</b>", " </a>"])
    message = _unittest_message(first, second)
    assert "[54 chars]" in message and "- </a>+  </a>? +" in message  # unittest's own run-together line
    pytest_detail = "\n".join(f"E       {line}" for line in message.splitlines())  # pytest's `E` column
    for detail in ("", pytest_detail):
        failure = make_failure("tests/test_x.py::T::test_it", file="tests/test_x.py", line=9, message=message,
                               detail=detail)  # fmt: skip
        assert failure.operands is not None and not failure.operands.shortened, failure.operands
        assert (failure.operands.first, failure.operands.second) == (repr(first), repr(second))
        hint = hint_for(failure)
        assert hint.confidence == "specific" and "differs only in whitespace" in hint.text, hint
    # an abbreviation no reading reproduces (a count changed) keeps the values unknown
    altered = message.replace("[54 chars]", "[53 chars]", 1)
    failure = make_failure("tests/test_x.py::T::test_it", message=altered)
    assert failure.operands is not None and failure.operands.shortened, failure.operands


# pytest.warns / pytest.raises(match=): the runner reports what it checked -----------------------------------------

_DID_NOT_WARN = ("Failed: DID NOT WARN. No warnings of type (<class 'UserWarning'>,) were emitted.\n"
                 " Emitted warnings: [ RuntimeWarning('no such file')].")  # fmt: skip


def test_pytest_warns_says_the_type_checked_and_the_warnings_emitted():
    hint = hint_for(_pytest_check("with pytest.warns(UserWarning):", _DID_NOT_WARN))
    assert hint.confidence == "specific" and "were not reported" not in hint.text and "a == b" not in hint.text
    assert ("a warning of type UserWarning and the code emitted none of that type; it emitted RuntimeWarning (the "
            "runner's list: «[ RuntimeWarning('no such file')]»)") in hint.text, hint
    regex = _DID_NOT_WARN.replace("were emitted.\n", "matching the regex were emitted.\n Regex: x\n")
    regex = regex.replace("RuntimeWarning", "UserWarning")  # one of the type was emitted: its text did not match
    said = hint_for(_pytest_check("with pytest.warns(UserWarning, match='x'):", regex)).text
    assert "none the code emitted matches; it emitted UserWarning" in said and "none of that type" not in said, said
    nothing = hint_for(_pytest_check("with pytest.warns(UserWarning):", _DID_NOT_WARN.replace(
        "[ RuntimeWarning('no such file')]", "[]"))).text  # fmt: skip
    assert "the runner lists no warning emitted at all" in nothing and "it emitted" not in nothing, nothing


def test_a_runners_own_words_are_quoted_and_the_comparison_advice_is_for_a_bare_assert_only():
    matched = ("AssertionError: Regex pattern did not match.\n Regex: 'abc'\n Input: 'xyz'")
    hint = hint_for(_pytest_check("with pytest.raises(ValueError, match='abc'):", matched))
    assert hint.confidence == "facts" and "were not reported" not in hint.text, hint
    assert "the runner said: «AssertionError: Regex pattern did not match. / Regex: 'abc' / Input: 'xyz'»" in hint.text
    bare = hint_for(_pytest_check("assert ok", "AssertionError: assert ok"))  # the rule does not fire: no values
    assert "were not reported (assert a comparison, `a == b`" in bare.text, bare
    # the runner's summary line cut to the terminal's width: what the rest said is not known, so neither "were not
    # reported" nor a quote as if it were the message (before: "were not reported", pytest had printed both sides)
    for short in ("Asserti...", "AssertionError: assert '\\x1b[37mte..."):
        cut = hint_for(_pytest_check("assert expected == f(x)", short))
        assert cut.confidence == "facts" and "were not reported" not in cut.text, cut
        assert f"the runner's message was cut short («{short}»)" in cut.text and "the runner said" not in cut.text


# 4. jest's Expected:/Received: pairs are read within one block -----------------------------------------------

_NTH_CALLED = """expect(jest.fn()).toHaveBeenNthCalledWith(n, ...expected)

n: 1
Expected: "a"
Received
       1: "b"
->     2: "c"

Number of calls: 2
"""
_TO_BE = """expect(received).toBe(expected) // Object.is equality

Expected: {}
Received: {}
"""


def test_jest_pairs_are_read_per_block_never_one_value_of_each_of_two_blocks():
    after_calls = make_failure("t", message=_NTH_CALLED + "\n" + _TO_BE.format(3, 4))
    assert (after_calls.expected, after_calls.got) == ("3", "4")  # the block that has both, not '"a"\nReceived…3'
    two = make_failure("t", message=_TO_BE.format(1, 2) + "\n" + _TO_BE.format(3, 4))
    assert (two.expected, two.got) == ("1", "2")
    lines = make_failure("t", message=_TO_BE.format('"one\ntwo \\" x"', '"one\nthree"'))
    assert (lines.expected, lines.got) == ('"one\ntwo \\" x"', '"one\nthree"')  # a string runs to its closing quote
    spelled = make_failure("t", message='Expected value: "a"\nReceived value: "b"')
    assert (spelled.expected, spelled.got) == ('"a"', '"b"')


def test_jest_blocks_without_a_received_value_right_below_give_no_pair():
    contain = "expect(received).toContain(expected) // indexOf\n\nExpected value: 3\nReceived array: [1, 2]\n"
    for message in (_NTH_CALLED, contain, _NTH_CALLED + "\n" + contain, 'Expected: "a"\n\nReceived: "b"'):
        failure = make_failure("t", file="a.spec.js", line=3, message=message)
        assert (failure.expected, failure.got) == (None, None), message
        assert hint_for(failure).confidence == "facts"
