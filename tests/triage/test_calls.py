"""Call-level reading of library failures: values, observed calls, SDD statements, definitions, types."""

from __future__ import annotations

import ast
from datetime import date
from decimal import Decimal

import pytest

from graphlemon.triage.calls import observed_calls, statements, statements_in
from graphlemon.triage.pyexpr import MISSING, Undefined, evaluate, parse_call, read_value, same_value
from graphlemon.triage.rundir import IntegrationFailure
from graphlemon.triage.sdd import sdd_clauses

CALC_MESSAGE = "assert 18 == 6\n +  where 18 = add(6, 12)\n +    where 6 = mul(-2, 3)\n +    and   12 = mul(3, 4)"


# -- values and formulas ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-6", -6),
        ("'Fizz'", "Fizz"),
        ("[1, (2, 3)]", [1, (2, 3)]),
        ("Decimal('92.00')", Decimal("92.00")),
        ("datetime.date(2024, 3, 10)", date(2024, 3, 10)),
        ("True", True),
    ],
)
def test_reprs_are_read_as_values(text, value):
    assert read_value(text) == value


@pytest.mark.parametrize(
    "text", ["<calc.Vector object at 0x7f3a>", "os.system('x')", "().__class__", "open('f')", "x" * 500, ""]
)
def test_anything_else_is_not_a_value(text):
    assert read_value(text) is MISSING


@pytest.mark.parametrize(
    "formula",
    ["2 ** 100000", "'a' * 10**9", "[0] * 10**9", "x.__class__", "__import__('os')", "1 / 0", "y + 1", "10**61 * 10"],
)
def test_formulas_outside_the_whitelist_or_the_limits_are_undefined(formula):
    with pytest.raises(Undefined):
        evaluate(ast.parse(formula, mode="eval").body, {"x": 1})


def test_formulas_evaluate_on_bound_names():
    node = ast.parse("min(max(x, lo), hi)", mode="eval").body
    assert evaluate(node, {"x": 15, "lo": 0, "hi": 10}) == 10
    assert same_value(0.1 + 0.2, 0.3) and same_value(Decimal("6.0"), 6) and not same_value(True, 1)
    assert not same_value("6", 6)


# -- observed calls --------------------------------------------------------------------------


def failure(message: str = "", stack: str = "") -> IntegrationFailure:
    return IntegrationFailure(case="c", message=message, stack=stack)


def test_introspection_gives_every_call_with_its_value_and_depth():
    seen = {(o.call.text, o.value, o.depth) for o in observed_calls(failure(CALC_MESSAGE, "E " + CALC_MESSAGE))}
    assert seen == {("add(6, 12)", 18, 0), ("mul(-2, 3)", 6, 1), ("mul(3, 4)", 12, 1)}


def test_function_and_bound_method_reprs_are_read_as_calls():
    message = (
        "assert 6 == -6\n +  where 6 = <function mul at 0x7f00aa>(-2, 3)\n"
        " +  and   5 = <bound method Cart.total of <shop.Cart object at 0x7f01>>()\n"
        " +  where 'a = b' = label('x')"
    )
    seen = {(o.call.name, o.call.text, o.value_text) for o in observed_calls(failure(message))}
    assert seen == {("mul", "mul(-2, 3)", "6"), ("total", "total()", "5"), ("label", "label('x')", "'a = b'")}


@pytest.mark.parametrize(
    ("stack", "message"),
    [
        (">       assert mul(-2, 3) == -6\nE       assert 6 == -6", "assert 6 == -6"),
        (">       assert -6 == mul(-2, 3)\nE       assert -6 == 6", "assert -6 == 6"),
        (">       self.assertEqual(mul(-2, 3), -6)\nE       AssertionError: 6 != -6", "AssertionError: 6 != -6"),
        (
            "> 7 |     expect(mul(-2, 3)).toBe(-6);\n    Expected: -6\n    Received: 6",
            "expect(received).toBe(expected)",
        ),
    ],
)
def test_plain_assertions_give_the_call_and_the_observed_operand(stack, message):
    [seen] = observed_calls(failure(message, stack))
    assert (seen.call.text, seen.value, seen.depth) == ("mul(-2, 3)", 6, 0)


def test_an_exception_gives_no_value_and_non_literal_arguments_no_call():
    [o] = observed_calls(failure("ZeroDivisionError", ">       assert mean([]) == 0\nE   ZeroDivisionError"))
    assert (o.call.text, o.value) == ("mean([])", MISSING)
    assert observed_calls(failure("", ">       assert total(items) == 3\nE   assert 2 == 3")) == []


# -- statements ------------------------------------------------------------------------------


def said(text: str) -> list[tuple[str, str]]:
    return [(s.call.text, s.text) for s in statements_in(text, "sdd.md", 1)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("mul follows the usual sign rules, so mul(-2, 3) returns -6.", [("mul(-2, 3)", "-6")]),
        (
            '`to_cents("19.99")` gives 1999 and to_cents("0.10") gives 10.',
            [("to_cents('19.99')", "1999"), ("to_cents('0.10')", "10")],
        ),
        ("`add(a, b)` returns a + b; a non-integer raises TypeError.", [("add(a, b)", "a + b")]),
        ("`clamp(x, lo, hi)` is `min(max(x, lo), hi)`.", [("clamp(x, lo, hi)", "min(max(x, lo), hi)")]),
        ('fizz(15) → "FizzBuzz"', [("fizz(15)", "'FizzBuzz'")]),
        ("area(2, 3) = 6", [("area(2, 3)", "6")]),
        ("mul(-2, 3) 返回 -6", [("mul(-2, 3)", "-6")]),
        ("double(x) equals 2 × x", [("double(x)", "2 * x")]),
        ("`reset()` returns None.", [("reset()", "None")]),
        # not statements
        ("`mean(xs)` returns 0 when xs is empty.", []),
        ("`parse(text)` returns None on malformed input.", []),
        ("`add(a, b)` returns the sum of a and b.", []),
        ("mul(-2, 3) does not return 6.", []),
        ("`fact(n)` is `n * fact(n - 1)`.", []),
        ("`week_start(day)` returns the first day of the week.", []),
        ("`tokenize(source) -> list[str]`", []),
        ("`f(x)` is called by g.", []),
    ],
)
def test_statement_wordings(text, found):
    assert said(text) == found


def test_tables_doctests_and_code_asserts_are_statements():
    doc = (
        '## rules\n\n| call | result |\n|---|---|\n| `fizz(15)` | `"FizzBuzz"` |\n| `fizz(n)` | the name of n |\n\n'
        "```python\n>>> fizz(3)\n'Fizz'\nassert fizz(10) == \"Buzz\"\n```\n"
    )
    clauses = sdd_clauses([("sdd.md", doc)], ["rules"])
    found = {(s.call.text, s.text, s.line) for s in statements(clauses, [("sdd.md", doc)])}
    assert found == {("fizz(15)", "'FizzBuzz'", 5), ("fizz(3)", "'Fizz'", 9), ("fizz(10)", "'Buzz'", 11)}


def test_a_formula_applies_to_any_arguments_an_example_to_its_own():
    [formula] = statements_in('`slugify(title, sep="-")` is `sep.join(title.split())`; pad(s, n=2) is s * n', "d", 1)
    assert formula.expected(parse_call("pad('ab')")) == "abab"
    assert formula.expected(parse_call("pad('ab', n=3)")) == "ababab"
    assert formula.expected(parse_call("pad('ab', 1, 2)")) is MISSING
    [example] = statements_in("mul(-2, 3) returns -6", "d", 1)
    assert example.expected(parse_call("mul(-2, 3)")) == -6 and example.expected(parse_call("mul(2, 3)")) is MISSING
    assert example.expected(parse_call("mul(x, 3)")) is MISSING
    [mean] = statements_in("mean(xs) returns sum(xs) / len(xs).", "d", 1)
    with pytest.raises(Undefined):
        mean.expected(parse_call("mean([])"))
