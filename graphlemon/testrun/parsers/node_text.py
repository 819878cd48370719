"""node:test's human output → cases, failures and counts: TAP (non-TTY default in Node 20) or spec.

The fallback for custom commands (`node --test`), npm test, and runs killed
before our reporter flushed. In both formats a test line followed by deeper
ones is a parent: only leaves (and parents that fail on their own) are cases.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase
from .common import UNNAMED, make_failure
from .js_common import check_line, value_text
from .tap import strict_yaml_block

_TAP_TEST = re.compile(r"^(?P<indent> *)(?P<mark>not ok|ok) \d+ - (?P<name>.*?)(?: # (?P<directive>SKIP|TODO)\b.*)?$")
_SPEC_TEST = re.compile(
    r"^(?P<indent> *)(?P<mark>✔|✖|﹣) (?P<name>.+?) \([\d.]+m?s\)(?: # (?P<directive>SKIP|TODO)\b.*)?$"
)
_COUNT = re.compile(r"^(?:#|ℹ) (?P<word>tests|pass|fail|skipped|todo|cancelled) (?P<n>\d+)\s*$", re.M)


@dataclass
class _Line:
    depth: int
    ok: bool
    name: str
    skipped: bool
    info: dict[str, str] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)


def parse_node_text(output: str) -> ParsedRun:
    tap = re.search(r"^ *(?:not )?ok \d+ - ", output, re.M) is not None
    lines = _tap_lines(output) if tap else _spec_lines(output)
    run = ParsedRun(source="text")
    for i, test in enumerate(lines):
        is_parent = i > 0 and lines[i - 1].depth > test.depth
        if is_parent and (test.ok or test.info.get("failureType") == "subtestsFailed" or not tap):
            continue
        file, line = _location(test.info.get("location", ""))
        status = "skipped" if test.skipped else "passed" if test.ok else "failed"
        run.cases.append(
            TestCase(name=test.name, file=file, line=line, status=status, selector=f"{file or ''}\t{test.name}")
        )  # type: ignore[arg-type]
        if status == "failed":
            body = "\n".join(test.body).strip()
            message = test.info.get("error") or test.info.get("printed") or "\n".join(body.splitlines()[:3]) or "failed"
            at, declared = check_line(test.info.get("stack", ""), file, line)
            run.failures.append(make_failure(test.name, file=file, line=at, message=message, detail=body or message,
                                             expected=test.info.get("expected"), got=test.info.get("actual"),
                                             grammar="json", declared=declared))  # fmt: skip
    if not run.cases:  # node's own counts include suites and parent tests: only when nothing else is known
        run.counts = _counts(output)
    return run


def _tap_lines(output: str) -> list[_Line]:
    """The TAP test lines, each with its YAML block read by a YAML parser (`_yaml_info`)."""
    lines: list[_Line] = []
    raw: list[list[str]] = []
    inside = False  # between a test's `---` and `...`
    opened = ""  # the `---` line's indentation: its `...` has the same (a `...` deeper is a line of a multi-line value)
    for text in output.splitlines():
        match = _TAP_TEST.match(text)
        if match and not inside and not text.endswith("# SKIP test name does not match pattern"):
            name = match["name"].strip() or UNNAMED
            lines.append(_Line(len(match["indent"]) // 4, match["mark"] == "ok", name, bool(match["directive"])))
            raw.append([])
        elif lines:
            if text.strip() == "---" and not raw[-1]:
                inside, opened = True, text[: len(text) - len(text.lstrip())]
            elif text.rstrip() == f"{opened}..." and inside:
                inside = False
            elif inside:
                raw[-1].append(text)
            lines[-1].body.append(text)
    for line, block in zip(lines, raw, strict=True):
        line.info = _yaml_info(block)
    return lines


def _yaml_info(block: list[str]) -> dict[str, str]:
    """A test's YAML block, loaded by a YAML parser: location, error, failureType and stack as text; expected and actual
    as JSON text (a nested mapping stays a mapping, a quoted `'5'` stays a string). A block the parser refuses is
    not read; one that repeats a key (node 20 prints some nested blocks unindented) gives no values and none of its
    repeated keys, and its text is the failure's message: no value from it is claimed as parsed."""
    found = strict_yaml_block("\n".join(block))
    if found is None:
        return {"printed": textwrap.dedent("\n".join(block)).strip()}
    loaded, repeated = found
    info: dict[str, str] = {}
    for key in ("location", "error", "failureType", "stack"):
        if isinstance(loaded.get(key), str):
            info[key] = loaded[key]
    if repeated:
        info["printed"] = textwrap.dedent("\n".join(block)).strip()
        return info
    for key in ("expected", "actual"):
        if key in loaded and loaded[key] is not None:
            info[key] = value_text(loaded[key]) or ""
    return info


def _spec_lines(output: str) -> list[_Line]:
    end = output.find("\n✖ failing tests:")
    lines: list[_Line] = []
    for text in (output if end < 0 else output[:end]).splitlines():
        match = _SPEC_TEST.match(text)
        if match:
            skipped = match["mark"] == "﹣" or bool(match["directive"])
            lines.append(
                _Line(len(match["indent"]) // 2, match["mark"] != "✖", match["name"].strip() or UNNAMED, skipped)
            )
        elif lines and not lines[-1].ok:
            lines[-1].body.append(text)
    return lines


def _location(text: str) -> tuple[str | None, int | None]:
    match = re.match(r"^(?P<file>.+?):(?P<line>\d+):\d+$", text)
    return (match["file"], int(match["line"])) if match else (None, None)


def _counts(output: str) -> TestSummary | None:
    numbers = {m["word"]: int(m["n"]) for m in _COUNT.finditer(output)}
    if "pass" not in numbers and "fail" not in numbers:
        return None
    passed, failed = numbers.get("pass", 0), numbers.get("fail", 0) + numbers.get("cancelled", 0)
    skipped = numbers.get("skipped", 0) + numbers.get("todo", 0)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)
