"""`go test -json` events → cases and failures; build failures → one failure per package.

A test with subtests is a parent: only leaves are cases, unless the parent failed
while none of its subtests did. A package that failed with no failing test (a
panic in init, TestMain, a build failure) becomes one failure named after it.
`module` (from go.mod) turns import paths into folders. A t.Errorf message is kept whole (its
continuation lines too) and read by the Go conventions (go_messages.py); a `-timeout` panic fails
the tests it stopped, by name, not their package.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ..output_text import to_str
from ..result_models import ParsedRun, TestCase
from .common import json_lines, make_failure
from .go_messages import (
    Timeout,
    binary_stop,
    example_output,
    go_compared,
    go_panic,
    go_timeout,
    log_messages,
    timeout_message,
    timeout_stop,
)

_TEST_FRAME = re.compile(r"^\t(?P<file>\S+_test\.go):(?P<line>\d+)", re.M)
_NOISE = re.compile(r"^(?:=== (?:RUN|PAUSE|CONT|NAME)|\s*--- (?:PASS|FAIL|SKIP):|PASS$|FAIL$|ok\s|FAIL\s)")
_BUILD_FAILED = re.compile(r"^FAIL\s+(?P<pkg>\S+) \[(?:build failed|setup failed)\]", re.M)
_COMPILE_ERROR = re.compile(r"^(?P<file>[^\s:]+\.go):(?P<line>\d+):(?:\d+:)? (?P<message>.+)$", re.M)


def package_dir(package: str, module: str | None) -> str:
    """`example.com/calc/broken` → `broken` (`.` for the module root) when inside the module."""
    if module and package == module:
        return "."
    if module and package.startswith(module + "/"):
        return package[len(module) + 1 :]
    return package


def parse_go_json(report: str, stderr: str = "", module: str | None = None) -> ParsedRun:
    run = ParsedRun(source="report")
    outcome: dict[tuple[str, str], str] = {}
    output: dict[tuple[str, str], list[str]] = defaultdict(list)
    package_failed: dict[str, bool] = {}
    order: list[tuple[str, str]] = []
    for event in json_lines(report):
        package, test, action = to_str(event.get("Package")), to_str(event.get("Test")), to_str(event.get("Action"))
        key = (package, test)
        if action == "output":
            output[key].append(to_str(event.get("Output")))
        elif action == "run" and test and key not in outcome:
            outcome[key] = "running"
            order.append(key)
        elif action in ("pause", "cont") and outcome.get(key) in ("running", "paused"):
            outcome[key] = "paused" if action == "pause" else "running"  # t.Parallel() waits: not running
        elif action in ("pass", "fail", "skip"):
            if test:
                if key not in outcome:
                    order.append(key)
                outcome[key] = action
            else:
                package_failed[package] = action == "fail"
    parents: set[tuple[str, str]] = set()
    failing_parents: set[tuple[str, str]] = set()
    for package, test in order:
        for cut in range(test.count("/")):
            parent = (package, test.rsplit("/", cut + 1)[0])
            parents.add(parent)
            if outcome[(package, test)] == "fail":
                failing_parents.add(parent)
    for key in order:
        if key in parents and not (outcome[key] == "fail" and key not in failing_parents):
            continue  # a parent is not a case, unless it failed while none of its subtests did
        _add_test(run, key, outcome[key], output[key], module)
    for package in {pkg for pkg, failed in package_failed.items() if failed}:
        _fail_timed_out(run, package, order, outcome, output, module)
    failing_packages = {pkg for (pkg, _t), c in ((k, outcome[k]) for k in order) if c == "fail"}
    for package, failed in package_failed.items():
        if failed and package not in failing_packages:
            _add_package_failure(run, package, "".join(output[(package, "")]) + stderr, module)
    for match in _BUILD_FAILED.finditer(report + "\n" + stderr):
        if match["pkg"] not in package_failed:
            _add_package_failure(run, match["pkg"], _build_section(stderr, match["pkg"]), module)
    for package in (pkg for pkg, failed in package_failed.items() if failed and not run.stopped):
        if any(pkg == package for pkg, _t in order):  # its tests ran: did its binary reach its own end line?
            run.stopped = binary_stop(package, "".join(line for (pkg, _t), lines in output.items() if pkg == package
                                                       for line in lines))  # fmt: skip
    running = [k for k in order if outcome[k] == "running"]
    if running:
        package, test = running[-1]
        folder = package_dir(package, module)
        run.running = TestCase(
            name=test, file=None if folder == "." else folder, status="failed", selector=f"{folder}\t{test}"
        )
    return run


def _add_test(run: ParsedRun, key: tuple[str, str], status: str, output: list[str], module: str | None) -> None:
    package, test = key
    if status in ("running", "paused"):  # never ended (a paused one never started its body): no case of its own
        return
    folder = package_dir(package, module)
    lines = [ln.rstrip("\n") for ln in output]
    located = log_messages(lines)
    file, line = None, None
    if located:
        file, line = f"{folder}/{located[0].file}".removeprefix("./"), located[0].line
    else:  # a panic: the test file's frame in the goroutine trace
        frame = _TEST_FRAME.search("".join(output))
        if frame:
            file, line = frame["file"], int(frame["line"])
    case_status = {"pass": "passed", "fail": "failed", "skip": "skipped"}[status]
    run.cases.append(TestCase(name=test, file=file, line=line, status=case_status, selector=f"{folder}\t{test}"))  # type: ignore[arg-type]
    if case_status == "failed":
        detail = "".join(output)
        body = [ln for ln in lines if ln.strip() and not _NOISE.match(ln.strip())]
        results = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("--- FAIL:")]
        example = example_output("\n".join(lines[results[0] + 1 :])) if results and test.startswith("Example") else None
        panic = None if located or example else go_panic(detail)
        message = "\n".join(m.text for m in located) or example or (panic.message() if panic else "\n".join(body[:4]))
        message = message or "failed"
        run.failures.append(make_failure(test, file=file, line=line, message=message, detail=detail,
                                         compared=go_compared(message, located[0].text if located else None)))  # fmt: skip


def _fail_timed_out(
    run: ParsedRun,
    package: str,
    order: list[tuple[str, str]],
    outcome: dict[tuple[str, str], str],
    output: dict[tuple[str, str], list[str]],
    module: str | None,
) -> None:
    """`panic: test timed out after 3s`: the tests it stopped fail by name (with their frame), not the package."""
    texts = {key: "".join(output[key]) for key in order if key[0] == package}
    texts[(package, "")] = "".join(output[(package, "")])
    timeout = next((t for t in map(go_timeout, texts.values()) if t is not None), None)
    if timeout is None:
        return
    run.stopped = timeout_stop(timeout)
    stopped = timeout.tests or [t for (pkg, t) in order if pkg == package and outcome[(pkg, t)] == "running"]
    for test in stopped:
        if outcome.get((package, test), "running") != "running":
            continue  # it ended before the alarm
        if (package, test) not in outcome:
            order.append((package, test))
        outcome[(package, test)] = "fail"
        if not any(other.startswith(test + "/") for other in stopped):  # a parent is not a case
            _add_timed_out(run, package, test, timeout, "".join(texts.values()), module)


def _add_timed_out(run: ParsedRun, package: str, test: str, timeout: Timeout, text: str, module: str | None) -> None:
    folder = package_dir(package, module)
    frame = timeout.frames.get(test.split("/")[0])
    file = f"{folder}/{frame[0].rsplit('/', 1)[-1]}".removeprefix("./") if frame else None
    line = frame[1] if frame else None
    run.cases.append(TestCase(name=test, file=file, line=line, status="failed", selector=f"{folder}\t{test}"))
    run.failures.append(make_failure(test, file=file, line=line, message=timeout_message(timeout, test), detail=text))


def _add_package_failure(run: ParsedRun, package: str, text: str, module: str | None) -> None:
    folder = package_dir(package, module)
    error = _COMPILE_ERROR.search(text)
    file = error["file"].removeprefix("./") if error else folder
    line = int(error["line"]) if error else None
    build = "[build failed]" in text or error is not None
    message = ("build failed: " + error["message"]) if error else _last_lines(text) or "package failed"
    name = f"{package} [build failed]" if build else f"{package} [package failed]"
    run.cases.append(TestCase(name=name, file=file, line=line, status="failed", selector=f"{folder}\t"))
    run.failures.append(make_failure(name, file=file, line=line, message=message, detail=text[-8000:]))


def _build_section(stderr: str, package: str) -> str:
    """The compiler's `# package` block of stderr (or all of stderr when there is none)."""
    header = re.search(rf"^# {re.escape(package)}(?: .*)?$", stderr, re.M)
    if not header:
        return stderr + f"\nFAIL\t{package} [build failed]"
    end = re.search(r"^# ", stderr[header.end() :], re.M)
    body = stderr[header.start() : header.end() + end.start()] if end else stderr[header.start() :]
    return body + "\n[build failed]"


def _last_lines(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not _NOISE.match(ln.strip())]
    return "\n".join(lines[-4:])


def human_text(report: str) -> str:
    """The `go test -v` text carried in the events' Output fields (for the output tail)."""
    parts: list[str] = []
    for event in json_lines(report):
        if event.get("Action") == "output":
            parts.append(to_str(event.get("Output")))
    return "".join(parts)
