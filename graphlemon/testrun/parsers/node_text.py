"""node:test's human output → cases, failures and counts: TAP (non-TTY default in Node 20) or spec.

The fallback for custom commands (`node --test`), npm test, and runs killed
before our reporter flushed. In both formats a test line followed by deeper
ones is a parent: only leaves (and parents that fail on their own) are cases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase
from .common import UNNAMED, make_failure

_TAP_TEST = re.compile(r"^(?P<indent> *)(?P<mark>not ok|ok) \d+ - (?P<name>.*?)(?: # (?P<directive>SKIP|TODO)\b.*)?$")
_SPEC_TEST = re.compile(
    r"^(?P<indent> *)(?P<mark>✔|✖|﹣) (?P<name>.+?) \([\d.]+m?s\)(?: # (?P<directive>SKIP|TODO)\b.*)?$"
)
_YAML_KEY = re.compile(r"^\s+(?P<key>location|error|expected|actual|failureType): ?(?P<value>.*)$")
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
            message = test.info.get("error") or "\n".join(body.splitlines()[:3]) or "failed"
            run.failures.append(make_failure(test.name, file=file, line=line, message=message, detail=body or message,
                                             expected=test.info.get("expected"), got=test.info.get("actual")))  # fmt: skip
    if not run.cases:  # node's own counts include suites and parent tests: only when nothing else is known
        run.counts = _counts(output)
    return run


def _tap_lines(output: str) -> list[_Line]:
    lines: list[_Line] = []
    collecting: str | None = None  # the YAML key whose `|-` block is being read
    for text in output.splitlines():
        match = _TAP_TEST.match(text)
        if match and not text.endswith("# SKIP test name does not match pattern"):
            name = match["name"].strip() or UNNAMED
            lines.append(_Line(len(match["indent"]) // 4, match["mark"] == "ok", name, bool(match["directive"])))
            collecting = None
        elif lines:
            current = lines[-1]
            key = _YAML_KEY.match(text)
            if key:
                block = key["value"].strip() in ("|-", "|", ">-")
                current.info[key["key"]] = "" if block else key["value"].strip().strip("'")
                collecting = key["key"] if block else None
            elif collecting and text.strip() not in ("...", "---") and not re.match(r"^\s+\w+: ", text):
                current.info[collecting] = (current.info.get(collecting, "") + "\n" + text.strip()).strip()
            else:
                collecting = None
            current.body.append(text)
    return lines


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
