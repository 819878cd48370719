"""`go test` without -json (a custom command): `--- FAIL/PASS/SKIP:` lines and package verdicts. Without -v no
passing test is printed: the run says so (`ParsedRun.unreported`), its passed count is not a count.

Messages are kept whole and read by the Go conventions (go_messages.py); a `-timeout` panic fails
the tests it stopped, by name.
"""

from __future__ import annotations

import re

from ..result_models import ParsedRun, TestCase
from .common import make_failure
from .go_json import package_dir
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

_RESULT = re.compile(r"^(?P<indent>\s*)--- (?P<status>PASS|FAIL|SKIP): (?P<name>\S+) \([\d.]+s\)$", re.M)
_BODY_END = re.compile(r"^(?:=== (?:RUN|CONT|PAUSE|NAME)|panic: |FAIL\s|ok\s|PASS$|FAIL$)", re.M)
_STATUS = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
_VERBOSE = re.compile(r"^=== RUN\s", re.M)  # -v announces every test; without it a passing test prints no line
_PASSES_UNSEEN = ("go test printed no `=== RUN` line, so none for its passing tests (run without -v or -json; "
                  "graphlemon's own `go test -json` names every test)")  # fmt: skip


def parse_go_text(output: str, module: str | None = None) -> ParsedRun:
    """`module` (from go.mod) turns a package's import path into its folder, for its files and selectors."""
    run = ParsedRun(source="text")
    ended: set[str] = set()
    for text, folder in _packages(output, module):
        names = _parse_package(run, text, folder)
        ended |= names
        verdict = _PACKAGE_END.search(text)
        if names and verdict and verdict[0].startswith("FAIL") and "[" not in verdict[0]:  # not `[build failed]`
            run.stopped = run.stopped or binary_stop(verdict["package"], text)
    _add_timed_out(run, output, ended)
    if not _VERBOSE.search(output):
        run.unreported = _PASSES_UNSEEN
    return run


# the line go prints after a package's tests (`ok  \tpath\t0.01s`, `FAIL\tpath\t0.01s`, `FAIL\tpath [build failed]`):
# with several packages (`./...`) each one's output comes whole before it
_PACKAGE_END = re.compile(r"^(?:ok|FAIL|\?) *\t(?P<package>[^\s\[]+)(?:[ \t].*)?$", re.M)


def _packages(output: str, module: str | None) -> list[tuple[str, str]]:
    """Each package's output with its folder (`.` when not known): a test is a package's, and the same name in two
    packages (`TestDiff` in each) is two tests, never a parent and its subtest or one merged result."""
    found, start = [], 0
    for end in _PACKAGE_END.finditer(output):
        found.append((output[start : end.end()], _folder(end["package"], module)))
        start = end.end()
    if output[start:].strip():
        found.append((output[start:], "."))
    return found


def _folder(package: str, module: str | None) -> str:
    inside = module and (package == module or package.startswith(module + "/"))
    return package_dir(package, module) if inside else "."


def _parse_package(run: ParsedRun, output: str, folder: str) -> set[str]:
    """One package's cases and failures (its files under `folder`); the names of the tests that ended."""
    results = list(_RESULT.finditer(output))
    names = {m["name"] for m in results}
    for i, match in enumerate(results):
        name = match["name"]
        if any(other.startswith(name + "/") for other in names):
            continue  # a parent of subtests
        status = _STATUS[match["status"]]
        run.cases.append(TestCase(name=name, status=status, selector=f"{folder}\t{name}"))  # type: ignore[arg-type]
        if status == "failed":
            end = results[i + 1].start() if i + 1 < len(results) else len(output)
            body = _body(output, match, end)
            located = log_messages(body.splitlines())
            example = example_output(_after(output, match, end)) if name.startswith("Example") else None
            panic = None if located or example else go_panic(output[match.end() : end])
            message = "\n".join(m.text for m in located) or example or (panic.message() if panic else "failed")
            file = f"{folder}/{located[0].file}".removeprefix("./") if located else None
            line = located[0].line if located else None
            if panic and panic.test:  # the test's own frame: where it called into the panic (its path as go printed)
                file, line = panic.test
            run.failures.append(make_failure(name, file=file, line=line, message=message,
                                             detail=body if not panic else output[match.start() : end],
                                             compared=go_compared(message, located[0].text if located else None)))  # fmt: skip
    return names


def _after(output: str, result: re.Match[str], next_start: int) -> str:
    """The lines after the test's `--- FAIL` line, up to the next test's or the package's."""
    after = output[result.end() : next_start]
    end = _BODY_END.search(after)
    return after[: end.start()] if end else after


def _body(output: str, result: re.Match[str], next_start: int) -> str:
    """The test's log lines: after its `--- FAIL` line (plain `go test`), else after its `=== RUN` line (`-v`)."""
    body = _after(output, result, next_start)
    if log_messages(body.splitlines()):
        return body
    runs = list(re.finditer(rf"^=== RUN\s+{re.escape(result['name'])}$", output[: result.start()], re.M))
    return output[runs[-1].end() : result.start()] if runs else body


def _add_timed_out(run: ParsedRun, output: str, ended: set[str]) -> None:
    """Without -json a test stopped by `-timeout` has no `--- FAIL` line: name it from the panic."""
    timeout = go_timeout(output)
    if timeout is None:
        return
    run.stopped = timeout_stop(timeout)
    stopped = timeout.tests or [name for name in timeout.frames if name not in ended] or _started_not_ended(output, ended)
    if not [t for t in stopped if t not in ended]:
        _add_unnamed_timeout(run, output, timeout)
    for test in (t for t in stopped if t not in ended and not any(o.startswith(t + "/") for o in stopped)):
        frame = timeout.frames.get(test.split("/")[0])
        file, line = (frame[0].rsplit("/", 1)[-1], frame[1]) if frame else (None, None)
        run.cases.append(TestCase(name=test, file=file, line=line, status="failed", selector=f".\t{test}"))
        run.failures.append(make_failure(test, file=file, line=line, message=timeout_message(timeout, test),
                                         detail=output[-8000:]))  # fmt: skip


_RUN = re.compile(r"^=== RUN\s+(?P<name>\S+)$", re.M)
_PAUSE = re.compile(r"^=== PAUSE\s+(?P<name>\S+)$", re.M)  # t.Parallel(): waits for its turn, body not started
_CONT = re.compile(r"^=== CONT\s+(?P<name>\S+)$", re.M)


def _started_not_ended(output: str, ended: set[str]) -> list[str]:
    """With -v: the tests go announced (`=== RUN`) before the panic and never ended (an Example has no frame of
    its own a dump would name)."""
    before = output[: output.find("panic: test timed out")]
    paused = {m["name"] for m in _PAUSE.finditer(before)} - {m["name"] for m in _CONT.finditer(before)}
    return list(dict.fromkeys(m["name"] for m in _RUN.finditer(before) if m["name"] not in ended | paused))


_PACKAGE_FAIL = re.compile(r"^FAIL\t(?P<package>\S+)\t", re.M)


def _add_unnamed_timeout(run: ParsedRun, output: str, timeout: Timeout) -> None:
    """go < 1.20 names a stopped test only by its goroutine's stack, which a goroutine busy on another thread
    does not print ("stack unavailable"): the package fails, and the message says the test is not known."""
    package = _PACKAGE_FAIL.search(output, output.find("panic: test timed out"))
    name = f"{package['package'] if package else 'package'}: timed out"
    message = (f"panic: test timed out after {timeout.after}; go's output names no running test "
               "(go >= 1.20 lists them under `running tests:`, or run with -v)")  # fmt: skip
    run.cases.append(TestCase(name=name, status="failed", selector=".\t"))
    run.failures.append(make_failure(name, message=message, detail=output[-8000:]))
