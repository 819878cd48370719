"""Every parser, fed truncated, garbled or random reports, returns a ParsedRun and never raises."""

from __future__ import annotations

import json
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlemon.testrun.assertions import extract_expected_got
from graphlemon.testrun.hints import build_hint
from graphlemon.testrun.output_text import head_and_tail, strip_ansi
from graphlemon.testrun.parsers.cargo_text import compile_failure, parse_cargo_text
from graphlemon.testrun.parsers.generic import parse_any_text
from graphlemon.testrun.parsers.go_json import parse_go_json
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.jest_json import parse_jest_json
from graphlemon.testrun.parsers.jest_text import parse_jest_text
from graphlemon.testrun.parsers.mocha_json import parse_mocha_json
from graphlemon.testrun.parsers.mocha_text import parse_mocha_text
from graphlemon.testrun.parsers.node_events import parse_node_events
from graphlemon.testrun.parsers.node_text import parse_node_text
from graphlemon.testrun.parsers.pytest_report import parse_pytest_report
from graphlemon.testrun.parsers.pytest_text import parse_pytest_text
from graphlemon.testrun.parsers.vitest_text import parse_vitest_text, unhandled_errors
from graphlemon.testrun.result_models import ParsedRun, TestFailure

from .helpers import FIXTURES

SAMPLES = FIXTURES / "reports"
# parser → the real sample it is meant for (captured from the fixture projects)
PARSERS = {
    "pytest-report": (parse_pytest_report, "pytest.report.txt"),
    "pytest-text": (parse_pytest_text, "pytest.output.txt"),
    "jest-json (jest)": (parse_jest_json, "jest.report.txt"),
    "jest-json (vitest)": (parse_jest_json, "vitest.report.txt"),
    "jest-text": (parse_jest_text, "jest.output.txt"),
    "vitest-text": (parse_vitest_text, "vitest.output.txt"),
    "mocha-json": (parse_mocha_json, "mocha.report.txt"),
    "mocha-text": (parse_mocha_text, "mocha-spec.output.txt"),
    "node-events": (parse_node_events, "node.report.txt"),
    "node-text (spec)": (parse_node_text, "node.output.txt"),
    "node-text (tap)": (parse_node_text, "node-tap.output.txt"),
    "go-json": (partial(parse_go_json, stderr="", module="example.com/calc"), "go.report.txt"),
    "go-text": (parse_go_text, "go-verbose.output.txt"),
    "cargo-text": (parse_cargo_text, "cargo.output.txt"),
    "any-text": (parse_any_text, "node-tap.output.txt"),
}
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(parsed: ParsedRun) -> None:
    assert isinstance(parsed, ParsedRun)
    for case in parsed.cases:
        assert case.status in ("passed", "failed", "skipped") and case.name.strip()
    for failure in parsed.failures:
        assert failure.name.strip() and len(failure.message) <= 600
        assert build_hint(failure)  # every failure gets a non-empty hint, whatever its text


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_each_parser_reads_its_real_sample(name):
    parser, sample = PARSERS[name]
    parsed = parser((SAMPLES / sample).read_text())
    check(parsed)
    assert parsed.found, f"{name} found nothing in {sample}"
    assert parsed.source == ("report" if "report" in sample else "text")


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_truncated_and_garbled_samples_never_raise(name, data):
    parser, sample = PARSERS[name]
    text = (SAMPLES / sample).read_text()
    cut = data.draw(st.integers(0, len(text)))
    text = text[:cut]
    for _ in range(data.draw(st.integers(0, 6))):
        at = data.draw(st.integers(0, len(text)))
        junk = data.draw(
            st.sampled_from(
                ['"', "{", "}", "\n", "\x1b[31m", "::", "\t", "ok 1 - ", "---- ", "✓ ", "\\", "null", "[", "1e999"]
            )
        )
        if data.draw(st.booleans()):
            text = text[:at] + junk + text[at:]
        else:
            text = text[:at] + text[at + len(junk) :]
    check(parser(text))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=25,
)
KEYS = st.sampled_from(["testResults", "assertionResults", "status", "failureMessages", "ancestorTitles", "title",
                        "tests", "failures", "pending", "err", "event", "nodeid", "when", "outcome", "location",
                        "Action", "Test", "Package", "Output", "nesting", "name", "file", "error", "crash", "longrepr"])  # fmt: skip
SHAPED = st.recursive(
    JSON_VALUES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=6),
    max_leaves=30,
)


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(value=SHAPED, as_lines=st.booleans())
def test_report_shaped_json_of_any_types_never_raises(name, value, as_lines):
    parser, _ = PARSERS[name]
    values = value if as_lines and isinstance(value, list) else [value]
    check(parser("\n".join(json.dumps(v) for v in values)))


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(text=st.text(max_size=400))
def test_random_text_never_raises(name, text):
    parser, _ = PARSERS[name]
    check(parser(text))


@FUZZ
@given(text=st.text(max_size=600))
def test_helpers_never_raise(text):
    check(ParsedRun(failures=unhandled_errors(text)))
    failure = compile_failure(text)
    assert failure is None or failure.name == "cargo: build failed"
    expected, got = extract_expected_got(text)
    assert (expected is None) == (got is None)
    cleaned = strip_ansi(text)
    assert "\x1b" not in cleaned
    assert len(head_and_tail(cleaned, 100)) <= 100 + 60


@FUZZ
@given(message=st.text(max_size=300), detail=st.text(max_size=300), expected=st.none() | st.text(max_size=40),
       got=st.none() | st.text(max_size=40), line=st.none() | st.integers(1, 10_000))  # fmt: skip
def test_hints_for_any_failure_are_short_and_never_generic(message, detail, expected, got, line):
    hint = build_hint(
        TestFailure(name="t", file="tests/t.py", line=line, message=message, detail=detail, expected=expected, got=got)
    )
    assert hint and "fix the bug" not in hint.lower()
    assert hint.count(". ") <= 2  # one or two sentences
