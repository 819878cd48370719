"""The two test tiers, enforced (README, "Tests"): a test that starts a process other than git, binds a socket (a
listening server, Chromium's driver included) must be marked `system`; `make test-fast` runs the rest.

An audit hook (sys.addaudithook, one frozenset look-up per audit event) sees every `subprocess.Popen` (asyncio's
subprocesses and Playwright's driver included), `os.posix_spawn`, `os.fork`, `os.forkpty`, `os.system`, `os.exec*`
and `socket.bind`, from any thread (and while a test module is imported: its tests own that); multiprocessing's spawn and forkserver starts, which raise no audit event, are
seen through `_posixsubprocess.fork_exec`. What happens while a test is set up, runs or tears down its own
(function-scoped) fixtures belongs to that test, and so does what a fixture's set-up started to every test that
uses the fixture; a thread a system test leaves running is its own (what it does later is no other test's). A test
not marked `system` that did any of it fails with the message below, whatever the test itself caught. Loaded by
tests/conftest.py (`pytest_plugins`); in each xdist worker on its own.
"""

from __future__ import annotations

import _posixsubprocess
import json
import os
import shutil
import sys
import threading

import pytest

MARKER = "system"
SPAWN = "tier_guard.spawn"  # the event _fork_exec raises
WATCHED = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.system", "os.exec", "socket.bind", SPAWN}
)
# allowed: the real git (GraphLemon's own git runner: cheap, local, the unit tier's tmp repos), found as REAL_GIT below
SHOWN = 3  # the first distinct starts named in a failure


class _Watch:
    """The test being set up, run or torn down in this process, and what it started."""

    item: pytest.Item | None = None
    found: list[str] = []  # in the current phase
    seen: list[str] = []  # in the whole test (--tier-log)
    starters: dict[object, str] = {}  # fixture definition -> what its set-up started (in this process)
    collecting = False  # a test module is being imported
    imports: dict[str, str] = {}  # test module's node id -> what its import started
    leftovers: set[int] = set()  # threads a system test left running: what they do later is theirs


def describe(event: str, args: tuple) -> str | None:
    """What an audit event started, in words, or None when it is allowed (git) or none of ours."""
    if event not in WATCHED:
        return None
    if event == "socket.bind":
        return f"bound a socket to {args[1]!r}"
    if event in ("os.fork", "os.forkpty"):
        return f"called {event}()"
    if event == "os.system":
        return f"ran a shell command ({_text(args[0])!r})"
    program, argv = _program(event, args)
    env = args[3] if event == "subprocess.Popen" and len(args) > 3 else None
    if _resolved(program, env) == REAL_GIT or _probe_of_this_interpreter(program, argv, env):
        return None
    return f"started a process: {' '.join(_text(a) for a in argv[:4])[:160]}"


def _resolved(program: str, env) -> str | None:
    """The file a program name runs (looked up on the PATH the process gets), its links resolved: a program merely
    named `git` or `file` is not the real one."""
    path = None
    if env is not None:
        path = env.get("PATH", env.get(b"PATH")) if hasattr(env, "get") else None
        path = os.fsdecode(path) if path is not None else None
    found = program if os.sep in program else shutil.which(program, path=path)
    return os.path.realpath(found) if found else None


REAL_GIT = _resolved("git", None)
REAL_FILE = _resolved("file", None)


def _probe_of_this_interpreter(program: str, argv: list, env) -> bool:
    """`platform.architecture()` runs `file -b` on the interpreter (Prefect's vendored croniter does at its import):
    the standard library reading this interpreter with the real `file`, not a process the test starts."""
    if REAL_FILE is None or _resolved(program, env) != REAL_FILE:
        return False
    if os.path.realpath(_text(argv[-1])) != os.path.realpath(sys.executable):
        return False
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_syscmd_file" and frame.f_globals.get("__name__") == "platform":
            return True
        frame = frame.f_back
    return False


def _program(event: str, args: tuple) -> tuple[str, list]:
    """(the program, its argv) of a process start: Popen (executable, args, cwd, env), posix_spawn and exec (path,
    argv, env), multiprocessing's spawn (argv)."""
    if event == SPAWN:
        return _text(args[0][0]), list(args[0])
    first, argv = args[0], args[1]
    argv = [argv] if isinstance(argv, str | bytes | os.PathLike) else list(argv)
    return _text(first if first is not None else argv[0]), argv


def _text(value) -> str:
    return os.fsdecode(value) if isinstance(value, str | bytes | os.PathLike) else str(value)


def _hook(event: str, args: tuple) -> None:
    if event not in WATCHED or not _own_thread():
        return
    if _Watch.collecting or (_Watch.item is not None and _counts(_Watch.item)):
        what = describe(event, args)
        if what is not None:
            thread = threading.current_thread()
            _Watch.found.append(what if thread is threading.main_thread() else f"{what} (thread {thread.name})")


def _own_thread() -> bool:
    return threading.get_ident() not in _Watch.leftovers


def _counts(item: pytest.Item) -> bool:
    """True unless `item` is past its own fixtures' teardown and pytest is tearing down a module's or the session's
    fixtures (those belong to the tests that asked for them, marked already when they start anything)."""
    stack = getattr(item.session, "_setupstate", None)
    stack = getattr(stack, "stack", None)
    return stack is None or item.parent in stack or item in stack


def _fork_exec(*args, **kwargs):
    """multiprocessing's spawn and forkserver start Python through `_posixsubprocess.fork_exec` with no audit event:
    raise one (subprocess bound the original at its import, and raises its own `subprocess.Popen`)."""
    sys.audit(SPAWN, args[0])
    return _real_fork_exec(*args, **kwargs)


_real_fork_exec = _posixsubprocess.fork_exec
_posixsubprocess.fork_exec = _fork_exec
sys.addaudithook(_hook)


def pytest_addoption(parser):
    parser.addoption(
        "--tier-log", metavar="FILE", default=None,
        help="append one JSON line per test to FILE: its node id, whether it is marked system, what it started",
    )  # fmt: skip


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _Watch.item, _Watch.found, _Watch.seen = item, [], []
    try:
        return (yield)
    finally:
        _Watch.item = None
        _log(item, _Watch.seen)
        if item.get_closest_marker(MARKER) is not None:
            _Watch.leftovers |= {t.ident for t in threading.enumerate() if t is not threading.main_thread()}


def _started_by(item: pytest.Item) -> list[tuple[str, str]]:
    """(name, what its set-up started) of each fixture this test uses whose set-up started something: the test's own
    definitions of its fixture names (a parametrize argument or another module's fixture may share a name)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    return [(name, _Watch.starters[d]) for name in item.fixturenames for d in defs.get(name, ()) if d in _Watch.starters]


def _log(item: pytest.Item, seen: list[str]) -> None:
    path = item.config.getoption("--tier-log")
    if path:
        line = {"test": item.nodeid.split("@")[0], "system": item.get_closest_marker(MARKER) is not None, "found": seen}
        with open(path, "a", encoding="utf-8") as log:  # one short line per write: workers append whole lines
            log.write(json.dumps(line) + "\n")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """A fixture whose set-up starts something (a session's Prefect server, a module's console) makes every test that
    uses it a system test, also the ones that find it started already."""
    before = len(_Watch.found)
    try:
        return (yield)
    finally:
        if len(_Watch.found) > before:
            _Watch.starters.setdefault(fixturedef, _Watch.found[before])  # the definition: names repeat across modules


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """What a test module starts when it is imported (a process run at module level) belongs to each of its tests."""
    if not isinstance(collector, pytest.Module):
        return (yield)
    _Watch.collecting, before = True, len(_Watch.found)
    try:
        return (yield)
    finally:
        _Watch.collecting = False
        if len(_Watch.found) > before:
            _Watch.imports.setdefault(collector.nodeid, _Watch.found[before])
            del _Watch.found[before:]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    found, _Watch.found = _Watch.found, []
    if call.when == "setup":
        found += [f"uses the fixture `{name}`, whose set-up {what}" for name, what in _started_by(item)
                  if not any(f.startswith(what) for f in found)]  # fmt: skip
        module = item.getparent(pytest.Module)
        if module is not None and module.nodeid in _Watch.imports:
            found.append(f"is in a module whose import {_Watch.imports[module.nodeid]}")
    _Watch.seen += found
    if not found or item.get_closest_marker(MARKER) is not None:
        return report
    shown = list(dict.fromkeys(found))
    more = f"\n  ... and {len(shown) - SHOWN} more" if len(shown) > SHOWN else ""
    message = (
        f"{item.nodeid} is not marked `{MARKER}` but during {call.when} it "
        + "\n  ".join(shown[:SHOWN])
        + more
        + f"\nEither mark it `@pytest.mark.{MARKER}` (a whole module: `pytestmark = pytest.mark.{MARKER}`), which takes"
        " it out of `make test-fast`, or make it start nothing: git is allowed; `cli_in_process` runs the CLI in this"
        " process; a Starlette TestClient or an httpx ASGI transport needs no socket. (tests/tier_guard.py)"
    )
    if report.failed and report.longrepr is not None:
        message += f"\n\nThe test also failed:\n{report.longrepr}"
    report.outcome, report.longrepr = "failed", message
    return report
