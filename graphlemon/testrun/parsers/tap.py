"""TAP 13/14 from a test stream (tape, tap, node:test's TAP reporter) → cases, failures and totals.

Parsed by tap.py's parser (the `tap` package), not by a regex of our own: one case per
`ok` / `not ok` result line (what tape and tap count as tests: assertions), named after the
`# test name` comment above it, its description and its number (`nums > should be equal (#58)`); `# SKIP` and `# TODO` directives are skipped. A failing
result's YAML block gives expected/actual and the `at:` location. The producer's closing
comments (`# tests N`, `# pass N`, `# fail N`, `# skip N`, `# todo N`) are its own totals.
Lines that are not TAP (npm's banners, coverage tables) are ignored.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from ...test_counts import TestSummary
from ..assertions import NODE_FALSY, node_assert_diff, truth_test
from ..result_models import ParsedRun, TestCase, TruthRequirement, ValueGrammar
from .common import UNNAMED, make_failure
from .js_common import value_text

_TAP_START = re.compile(r"^TAP version 1[34]\s*$|^1\.\.\d+\s*$", re.M)
_TOTAL = re.compile(r"^# (?P<word>tests|pass|fail|skip|skipped|todo)\s+(?P<n>\d+)\s*$", re.M)
# TAP's optional ` - ` between the number and the description (`ok 3 - adds`); a description that starts with a
# dash of its own (`ok 140 -1000, numericSeparator true`) keeps it
_TAP_SEPARATOR = re.compile(r"^-(?:\s+|$)")
_AT = re.compile(r"\(?(?P<file>(?:file://)?[^\s():]+\.[cm]?[jt]sx?):(?P<line>\d+)(?::\d+)?\)?")


def has_tap(output: str) -> bool:
    return _TAP_START.search(output) is not None and re.search(r"^(?:not )?ok\b", output, re.M) is not None


def parse_tap(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    if not has_tap(output):
        return run
    from tap.parser import Parser  # imported on use: only TAP runs need it

    group, reported = "", False  # the last `# test name`, and whether a result followed it
    try:
        lines = list(Parser().parse_text(output[output.find(_TAP_START.search(output).group(0)) :]))  # type: ignore[union-attr]
    except Exception:  # a stream tap.py cannot read is reported as unparsed, never as a crash of ours
        return run
    for line in lines:
        if line.category == "diagnostic":
            text = line.text.lstrip("#").strip()
            # `# Subtest: NAME` (node:test, tap) announces the result line that follows, not a group
            if text and not _TOTAL.match(line.text.strip()) and text != "ok" and not text.startswith("Subtest:"):
                group, reported = text, False
        elif line.category == "test":
            _add_result(run, line, group)
            reported = True
    _number_repeated_names(run, [line.number for line in lines if line.category == "test"])
    run.summary_counts = tap_totals(output)
    run.summary_label = "the TAP producer's closing totals"
    plans = [line.expected_tests for line in lines if line.category == "plan"]
    results = sum(line.category == "test" for line in lines)
    if (not plans and run.summary_counts is None) or (plans and results < plans[-1]):
        _stopped_early(run, output, group, reported)
    return run


# a JavaScript error as node prints it when it ends the process (`TypeError: x is not a function`)
_JS_ERROR = re.compile(r"^(?:\w*Error|Error)(?: \[[^\]\n]*\])?: .+$", re.M)


def _stopped_early(run: ParsedRun, output: str, group: str, reported: bool) -> None:
    """A TAP stream that ends without its plan (`1..N`) or totals, or with fewer results than its plan: the
    producer stopped before the end (a crash kills node mid-run), so the run is not complete; a test announced
    (`# name`) with no result after it is the one that was running, failed with the error printed, if any."""
    run.stopped = "the TAP stream ended before its plan (1..N) and totals: the test process stopped"
    if not group:
        return
    tail = output[output.rfind(f"# {group}") :]
    error = _JS_ERROR.search(tail)
    if reported and error is None:
        return  # the test's results came and nothing says it was cut short: the stream ended after it
    # a test that reported results and then crashed (its error printed after them) fails once more, for the crash
    pending = f"{group} > the test process stopped" if reported else group
    stack = tail[error.end() :].split("\n\n")[0] if error else ""
    said = f"{error.group(0)}{stack}" if error else "no error was printed"
    # the test's own frame: the first in a file this stream's results were located in (its test files); the
    # frames above it are where the error was raised, not the test
    tests = {c.file for c in run.cases if c.file}
    frame = next((m for m in _AT.finditer(stack) if m["file"].removeprefix("file://") in tests), None)
    file, line = (frame["file"].removeprefix("file://"), int(frame["line"])) if frame else (None, None)
    run.cases.append(TestCase(name=pending, file=file, line=line, status="failed"))
    run.failures.append(make_failure(pending, file=file, line=line, detail=tail[-8000:],
                                     message=f"the test process stopped during this test: {said}"))  # fmt: skip


def tap_totals(output: str) -> TestSummary | None:
    """`# tests 153 / # pass 150 / # fail 3` (the last block in the output); None without one."""
    words: dict[str, int] = {}
    for match in _TOTAL.finditer(output):
        if match["word"] == "tests":
            words = {}
        words[match["word"]] = int(match["n"])
    if "tests" not in words and "pass" not in words:
        return None
    failed = words.get("fail", 0)
    skipped = words.get("skip", 0) + words.get("skipped", 0) + words.get("todo", 0)
    total = words.get("tests", words.get("pass", 0) + failed + skipped)
    passed = words.get("pass", total - failed - skipped)
    # tape counts a skipped or todo assertion under pass as well; node:test does not
    if passed + failed + skipped > total:
        passed = max(0, total - failed - skipped)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)


def _add_result(run: ParsedRun, result: Any, group: str) -> None:
    directive = result.directive
    skipped = bool(directive and (directive.skip or directive.todo))
    description = result.description or ""
    if directive is not None and directive.text and not skipped:
        # only `# SKIP` / `# TODO` are directives: any other `#` belongs to the description (tape does not escape it)
        description = f"{description.rstrip()} # {directive.text}"
    description = _TAP_SEPARATOR.sub("", description, count=1).strip()
    name = f"{group} > {description}" if group and description else group or description or UNNAMED
    status = "skipped" if skipped else "passed" if result.ok else "failed"
    raw = getattr(result, "_yaml_block", None)
    tape = _is_tape_block(raw)
    block = tape_block(raw) if tape else yaml_block(raw)
    where = _AT.search(str(block.get("at") or block.get("stack") or ""))
    file = where["file"].removeprefix("file://") if where else None
    line = int(where["line"]) if where else None
    run.cases.append(TestCase(name=name, file=file, line=line, status=status))  # type: ignore[arg-type]
    if status != "failed":
        return
    has_values = "expected" in block or "actual" in block
    operator = str(block.get("operator") or "")
    message = description or "not ok"
    if operator:
        message = f"{message} ({operator})"
    detail = "\n".join(f"{k}: {v}" for k, v in block.items()) or message
    # tape prints values with object-inspect (JavaScript); a YAML block's values are YAML (written here as JSON)
    grammar: ValueGrammar = "js" if tape else "json"
    expected, got = (
        (_text(block.get("expected"), tape), _text(block.get("actual"), tape)) if has_values else (None, None)
    )
    if not has_values:  # node:test leaves them out when a side is undefined or a function: its diff has both
        expected, got = node_assert_diff(str(block.get("error") or ""))
        grammar = "js"
    truth = _TRUTH_OPERATORS.get(operator) or ("truthy" if NODE_FALSY.search(detail) else None)
    if truth is not None and got is not None:  # `t.ok(x)`, node's assert.ok: a truth test, no equality with `true`
        run.failures.append(make_failure(name, file=file, line=line, message=message, detail=detail,
                                         compared=truth_test(got, truth, grammar)))  # fmt: skip
        return
    run.failures.append(make_failure(name, file=file, line=line, message=message, detail=detail, expected=expected,
                                     got=got, grammar=grammar))  # fmt: skip


# tape's truth tests (`t.ok(x)` prints `expected: true`, `t.notOk(x)` `expected: false`: no equality with them)
_TRUTH_OPERATORS: dict[str, TruthRequirement] = {"ok": "truthy", "notOk": "falsy"}


# a tape block: `key: value` lines whose values are object-inspect's text (`'it\'s'`, `[ 'a', 1 ]`), not YAML
# (YAML would take `'1,000'` for the text 1,000 and refuses `\'`); a value of `|-` is the more indented lines below
_TAPE_KEY = re.compile(
    r"^(?P<indent> *)(?P<key>operator|expected|actual|at|stack|actual_|message|name|error):(?: (?P<value>.*))?$"
)


def _is_tape_block(raw: str | None) -> bool:
    """tape's block (operator, expected, actual, at, stack), not a YAML one (node:test's has duration_ms)."""
    if not raw:
        return False
    keys = {m["key"] for m in map(_TAPE_KEY.match, tap_lines(raw)) if m}
    return "operator" in keys and "at" in keys and "duration_ms:" not in raw


def tap_lines(text: str) -> list[str]:
    r"""TAP's lines: split at its line ends (`\n`, `\r\n`) only. A value printed raw may hold characters str.splitlines
    also breaks at (U+2028, U+2029, U+0085, \x0b, \x0c, \x1c-\x1e): they are the value's, not line ends."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def tape_block(raw: str | None) -> dict[str, Any]:
    """tape's block read by its own grammar: each known key's text as printed (a `|-` value: its lines below)."""
    found: dict[str, Any] = {}
    lines = tap_lines(raw or "")
    indent = min((len(ln) - len(ln.lstrip(" ")) for ln in lines if ln.strip()), default=0)
    i = 0
    while i < len(lines):
        match = _TAPE_KEY.match(lines[i])
        i += 1
        if match is None or len(match["indent"]) != indent:
            continue
        value = (match["value"] or "").strip()
        if value in ("|-", "|", ">-", ">", ""):
            # a block scalar's lines, or (no indicator) the value printed on the more indented lines below the key
            # (tape puts a long array there); a key with neither has no value (YAML's null), not an empty string
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip(" ")) > indent):
                block.append(lines[i])
                i += 1
            value = textwrap.dedent("\n".join(block)).strip("\n")
            if not value and not match["value"]:
                continue
        found[match["key"]] = value
    return found


def yaml_block(raw: str | None) -> dict[str, Any]:
    """A result's YAML block as a mapping, read here rather than through tap.py (which prints its YAML errors on
    stdout). Characters YAML refuses (U+FFFE/U+FFFF, most controls) stand for themselves in a producer's
    values: they are replaced by placeholders for the load and put back in every string after it."""
    if not raw:
        return {}
    import yaml

    refused = {c for c in raw if not _yaml_printable(c)}
    marks = {c: f"\ue000GRAPHLEMON-U+{ord(c):04X}\ue000" for c in refused}
    text = "".join(marks.get(c, c) for c in raw)
    try:
        loaded = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    back = {mark: c for c, mark in marks.items()}
    return {str(k): _restore(v, back) for k, v in loaded.items()}


def strict_yaml_block(raw: str) -> tuple[dict[str, Any], frozenset[str]] | None:
    """A YAML block as a mapping and the keys it repeats within one mapping (node 20 prints some nested blocks
    unindented, so their keys land beside the outer ones: which value belongs to which key is then not certain, and
    a repeated key is left out), or None when a YAML parser refuses the block. Characters YAML refuses are kept as
    `yaml_block` keeps them."""
    import yaml

    repeated: set[str] = set()

    class _Strict(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            keys = [str(self.construct_object(k, deep=deep)) for k, _ in node.value]
            repeated.update(k for k in keys if keys.count(k) > 1)
            return super().construct_mapping(node, deep=deep)

    refused = {c for c in raw if not _yaml_printable(c)}
    marks = {c: f"\ue000GRAPHLEMON-U+{ord(c):04X}\ue000" for c in refused}
    text = textwrap.dedent("".join(marks.get(c, c) for c in raw))
    try:
        loaded = yaml.load(text, Loader=_Strict)  # noqa: S506 - a SafeLoader that notes repeated keys
    except (yaml.YAMLError, RecursionError):
        return None
    if not isinstance(loaded, dict):
        return None
    back = {mark: c for c, mark in marks.items()}
    return {str(k): _restore(v, back) for k, v in loaded.items() if str(k) not in repeated}, frozenset(repeated)


def _yaml_printable(ch: str) -> bool:
    """YAML 1.1's printable set (what PyYAML's reader accepts)."""
    code = ord(ch)
    return (ch in "\t\n\r" or 0x20 <= code <= 0x7E or code == 0x85 or 0xA0 <= code <= 0xD7FF
            or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF)  # fmt: skip


def _restore(value: Any, back: dict[str, str]) -> Any:
    if isinstance(value, str):
        for mark, ch in back.items():
            value = value.replace(mark, ch)
        return value
    if isinstance(value, list):
        return [_restore(v, back) for v in value]
    if isinstance(value, dict):
        return {k: _restore(v, back) for k, v in value.items()}
    return value


def _number_repeated_names(run: ParsedRun, numbers: list[int | None]) -> None:
    """Assertions with the same text (`should be equal`) stay apart by their TAP number: `... (#58)`."""
    counts: dict[str, int] = {}
    for case in run.cases:
        counts[case.name] = counts.get(case.name, 0) + 1
    renamed: dict[int, str] = {}
    for i, (case, number) in enumerate(zip(run.cases, numbers, strict=False)):
        if counts[case.name] > 1 and number:
            renamed[i] = f"{case.name} (#{number})"
    failing = [i for i, case in enumerate(run.cases) if case.status == "failed"]
    for failure, i in zip(run.failures, failing, strict=False):
        if i in renamed:
            failure.name = renamed[i]
    for i, name in renamed.items():
        run.cases[i].name = name


def _text(value: Any, printed: bool) -> str | None:
    """A block's value as text: tape's as printed; a YAML value as JSON (a string quoted, so `5` and `'5'` differ)."""
    if value is None:
        return None
    if printed:
        return str(value)
    return value_text(value)
