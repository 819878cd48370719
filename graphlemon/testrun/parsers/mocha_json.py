"""mocha's JSON reporter (`--reporter json --reporter-option output=FILE`) → cases and failures.

Failing hooks ("before each" hook for ...) are failures that are not tests:
they become failed cases of their own.
"""

from __future__ import annotations

import re
from typing import Any

from ..assertions import NODE_ARGUMENTS, Compared
from ..output_text import clip, to_str
from ..result_models import ParsedRun, TestCase, ValueGrammar
from .common import UNNAMED, load_json, make_failure
from .js_common import VALUE_CHARS, line_in_file, message_of, value_text

_HOOK = re.compile(r'"(before|after) (?:each|all)" hook')


def parse_mocha_json(text: str) -> ParsedRun:
    data = load_json(text)
    run = ParsedRun(source="report")
    if not isinstance(data, dict):
        return run
    failures = _entries(data.get("failures"))
    pending = {_key(e) for e in _entries(data.get("pending"))}
    failed = {_key(e): e for e in failures}
    tests = _entries(data.get("tests"))
    for entry in tests:
        key = _key(entry)
        status = "failed" if key in failed else "skipped" if key in pending else "passed"
        add_entry(run, entry, status)
    known = {_key(e) for e in tests}
    for entry in failures:
        if _key(entry) not in known:  # a failing hook
            add_entry(run, entry, "failed")
    return run


def add_entry(run: ParsedRun, entry: dict[str, Any], status: str) -> None:
    """One test (or failing hook) of mocha's JSON shape as a case, and a failure when it failed."""
    name = (to_str(entry.get("fullTitle")) or to_str(entry.get("title"))).strip() or UNNAMED
    file = to_str(entry.get("file")) or None
    err = entry.get("err") if isinstance(entry.get("err"), dict) else {}
    stack = to_str(err.get("stack"))
    line = line_in_file(stack, file)
    run.cases.append(TestCase(name=name, file=file, line=line, status=status, selector=f"{file}\t{name}"))  # type: ignore[arg-type]
    if status != "failed":
        return
    message = message_of(stack) or to_str(err.get("message"))
    error_name = to_str(err.get("name"))
    if error_name and not message.startswith(error_name):
        message = f"{error_name}: {message}"
    hook = _HOOK.search(name)
    if hook:  # a failing hook: the tests under it never ran (before) or ran (after)
        message = f"error in {'setup' if hook.group(1) == 'before' else 'teardown'}: {message}"
    has_values = "expected" in err and "actual" in err
    grammar = _GRAMMAR.get(to_str(err.get("valueFormat")), "mocha")
    if has_values and to_str(err.get("code")) == "ERR_ASSERTION":
        # node's assert (`assert.equal(actual, expected)`): argument positions, not sides — the test's source
        # settles which one is expected (hint_values), else both are said as node names them
        compared = Compared(_value(err.get("actual")) or "", _value(err.get("expected")) or "", NODE_ARGUMENTS, None,
                            grammar)  # fmt: skip
        run.failures.append(make_failure(name, file=file, line=line, message=message, detail=stack or message,
                                         compared=compared))  # fmt: skip
        return
    run.failures.append(
        make_failure(
            name, file=file, line=line, message=message, detail=stack or message,
            expected=_value(err.get("expected")) if has_values else None,
            got=_value(err.get("actual")) if has_values else None, grammar=grammar,
        )
    )  # fmt: skip


# our hook's values: both strings as they are, or both util.inspect'ed; mocha's JSON reporter: its diff form
_GRAMMAR: dict[str, ValueGrammar] = {"text": "text", "inspect": "js"}


def _value(value: Any) -> str | None:
    """mocha's JSON reporter already prints expected/actual as strings; other values as JSON."""
    return clip(value, VALUE_CHARS) if isinstance(value, str) else value_text(value)


def _entries(value: Any) -> list[dict[str, Any]]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _key(entry: dict[str, Any]) -> tuple[str, str]:
    return to_str(entry.get("file")), to_str(entry.get("fullTitle")) or to_str(entry.get("title"))
