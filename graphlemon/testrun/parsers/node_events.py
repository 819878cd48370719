"""Our node:test reporter's JSON lines → cases and failures.

Events arrive in completion order, children before their parent, one file at a
time per file stream. Suites and parents whose only error is "N subtests failed"
are not cases; a test with subtests that fails on its own is. A file-level
failure (name = file path, no children) is a file that did not load: its stderr
is the detail.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..output_text import to_int, to_str
from ..result_models import ParsedRun, TestCase
from .common import UNNAMED, error_summary, json_lines, make_failure
from .js_common import check_line, message_of

FILTERED_OUT = "test name does not match pattern"  # node's skip reason under --test-name-pattern
_ERROR_CHECKS = ("throws", "rejects")


@dataclass
class _Node:
    event: dict[str, Any]
    children: list[_Node] = field(default_factory=list)

    @property
    def nesting(self) -> int:
        return to_int(self.event.get("nesting")) or 0


def parse_node_events(text: str) -> ParsedRun:
    run = ParsedRun(source="report")
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    stderr: dict[str, list[str]] = defaultdict(list)
    started: list[dict[str, Any]] = []
    finished: set[tuple[str, str, int]] = set()
    for record in json_lines(text):
        kind = record.get("event")
        file = to_str(record.get("file"))
        if kind in ("pass", "fail"):
            finished.add(_key(record))
            if record.get("skip") != FILTERED_OUT:
                by_file[file].append(record)
        elif kind == "start":
            started.append(record)
        elif kind == "stderr":
            stderr[file].append(to_str(record.get("message")))
    for file, events in by_file.items():
        for root in _tree(events):
            _walk(run, root, [], "".join(stderr.get(file, [])))
    unfinished = [r for r in started if _key(r) not in finished]
    if unfinished:
        last = unfinished[-1]
        file = to_str(last.get("file")) or None
        run.running = TestCase(name=to_str(last.get("name")) or "(test)", file=file, line=to_int(last.get("line")),
                               status="failed", selector=f"{file}\t{to_str(last.get('name'))}")  # fmt: skip
    return run


def _key(record: dict[str, Any]) -> tuple[str, str, int]:
    return to_str(record.get("file")), to_str(record.get("name")), to_int(record.get("line")) or 0


def _tree(events: list[dict[str, Any]]) -> list[_Node]:
    pending: list[_Node] = []
    for event in events:
        node = _Node(event)
        children: list[_Node] = []
        while pending and pending[-1].nesting > node.nesting:
            children.insert(0, pending.pop())
        node.children = children
        pending.append(node)
    return pending


def _walk(run: ParsedRun, node: _Node, ancestors: list[str], stderr: str) -> None:
    event = node.event
    name = to_str(event.get("name")).strip() or UNNAMED
    for child in node.children:
        _walk(run, child, [*ancestors, name], stderr)
    error = event.get("error") if isinstance(event.get("error"), dict) else None
    own_failure = event.get("event") == "fail" and not (error and error.get("failureType") == "subtestsFailed")
    if node.children and not own_failure:
        return
    if event.get("type") == "suite" and not own_failure:
        return
    file = to_str(event.get("file")) or None
    full = " > ".join([*ancestors, name])
    status = (
        "failed"
        if event.get("event") == "fail"
        else "skipped"
        if event.get("skip") is not None or event.get("todo") is not None
        else "passed"
    )
    line = to_int(event.get("line"))
    run.cases.append(TestCase(name=full, file=file, line=line, status=status, selector=f"{file}\t{full}"))  # type: ignore[arg-type]
    if status == "failed":
        _add_failure(run, full, file, line, error or {}, stderr if name == file else "")


def _add_failure(
    run: ParsedRun, name: str, file: str | None, line: int | None, error: dict[str, Any], stderr: str
) -> None:
    stack = to_str(error.get("stack"))
    message = to_str(error.get("message"))
    error_name = to_str(error.get("name"))
    if error_name and error_name != "Error" and not message.startswith(error_name):
        message = f"{error_name}: {message}"
    if stderr:  # the file itself failed (did not load, exited non-zero): its stderr says why
        message, stack = "file failed: " + error_summary(stderr), stderr
    # assert.throws / rejects with an expected object: the actual is the thrown error, compared property by
    # property (node's diff in the message says which); its printed form is not a value the check compared
    has_values = ("expected" in error or "actual" in error) and error.get("operator") not in _ERROR_CHECKS
    at, declared = check_line(stack, file, line)
    run.failures.append(
        make_failure(
            name, file=file, line=at, declared=declared, message=message or message_of(stack), detail=stack or message,
            expected=to_str(error.get("expected")) or None if has_values else None,
            got=to_str(error.get("actual")) or None if has_values else None, grammar="js",
        )
    )  # fmt: skip
