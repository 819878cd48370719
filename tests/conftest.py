"""Shared fixtures: temp git repos, initialised projects, the CLI as a real process, one real Prefect stack.

Environment hygiene happens at import time (before anything imports Prefect):
a private PREFECT_HOME, no analytics, a generous ephemeral-server start-up
timeout, and a git identity so commits work on a machine with no git config.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Once per process: this module imported again under another name (`tests.conftest`) must not give the session a
# second PREFECT_HOME and config folder half-way (the local server started under the first would outlive the session).
if os.environ.get("GRAPHLEMON_TEST_SESSION_PID") != str(os.getpid()):
    os.environ.update(
        {
            "GRAPHLEMON_TEST_SESSION_PID": str(os.getpid()),
            "PREFECT_HOME": tempfile.mkdtemp(prefix="graphlemon-prefect-home-"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "GRAPHLEMON_CONFIG_DIR": tempfile.mkdtemp(prefix="graphlemon-config-"),  # the project registry
            "GIT_AUTHOR_NAME": "GraphLemon Test",
            "GIT_AUTHOR_EMAIL": "test@graphlemon.local",
            "GIT_COMMITTER_NAME": "GraphLemon Test",
            "GIT_COMMITTER_EMAIL": "test@graphlemon.local",
        }
    )
    os.environ.pop("PREFECT_API_URL", None)
    os.environ.pop("ANTHROPIC_API_KEY", None)

# The test-only packages (pyproject's `test-only` extra: hypothesis) live beside the venv's site-packages, not in
# them (scripts/install.py): importable here, but no pytest plugin of theirs loads in the test runs of the projects
# the tests make with this interpreter. Appended: nothing there shadows a package of the venv.
_TEST_DEPS = str(Path(sys.prefix) / "test-deps")
if os.path.isdir(_TEST_DEPS) and _TEST_DEPS not in sys.path:
    sys.path.append(_TEST_DEPS)

try:  # no property test is a timed test: the machines are shared and noisy (a slow example is not a failure)
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("graphlemon", deadline=None)
    _hypothesis_settings.load_profile("graphlemon")
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass

pytest_plugins = ["tier_guard"]  # the unit tier's guard: a test that starts a process or binds a socket is `system`

ROOT = Path(__file__).resolve().parents[1]
GRAPHLEMON = [sys.executable, "-m", "graphlemon"]


def pytest_addoption(parser):
    parser.addoption(
        "--run-live", action="store_true", default=False, help="run T3 tests that call a real model (costs money)"
    )


def pytest_sessionfinish(session, exitstatus):
    """The local Prefect server `graphlemon run` started for this session's projects (under its private
    GRAPHLEMON_CONFIG_DIR) stops with the session instead of idling for half an hour."""
    from graphlemon import local_server

    directory = Path(os.environ["GRAPHLEMON_CONFIG_DIR"]) / "prefect-server"
    if directory.is_dir():
        local_server.stop(directory)


def pytest_collection_modifyitems(config, items):
    skip_live = pytest.mark.skip(reason="live model test: opt in with --run-live")
    grouped = getattr(config.option, "loadgroup", False)  # set on an xdist worker of `--dist loadgroup`
    for item in items:
        if "live" in item.keywords and not config.getoption("--run-live"):
            item.add_marker(skip_live)
        if grouped:  # `-n 2 --dist loadgroup` (make test's default): a group runs whole on one worker
            _join_group(item, _group(item))
    # the Prefect stack's tests run one after the other: in one process last (its workers poll the server only while
    # they are needed); over xdist workers first, the longest group, while the other worker takes the rest
    items.sort(key=lambda item: _on_stack(item) != grouped)


def pytest_configure(config):
    """Over xdist workers, groups are handed out in the order of the collection (above), not largest first."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# session fixtures a test of the Prefect stack also uses: their tests run on the stack's worker, so each is made once
# (`snake_run`, the demo story through Prefect, took 50-90 s on each worker that made it)
STACK_SHARED = frozenset({"prefect_stack", "snake_run"})


def _on_stack(item) -> bool:
    return not STACK_SHARED.isdisjoint(item.fixturenames)


def _group(item) -> str:
    """A test module runs on one worker (its module-scoped console and Chromium start once); so does every test of
    the Prefect stack (its deployments and workers start once), and every test of a session fixture it shares."""
    return "prefect-stack" if _on_stack(item) else item.nodeid.split("::")[0]


def _join_group(item, group: str) -> None:
    """xdist's loadgroup schedules by the `@group` suffix of a test's node id, which its own hook (xdist 3.8) writes
    to `Item._nodeid`; pytest 9 keeps the node id in `Item._id` and never reads `_nodeid`, so there the suffix is
    written here (without it every test is a group of its own, and a module's console, Chromium and the Prefect
    stack start on both workers). This is the fix proposed upstream (pytest-xdist issue 1386, pull request 1388)."""
    if hasattr(item, "_id"):
        from _pytest.nodeid import NodeId

        if "@" not in item.nodeid.rpartition("]")[2]:
            item._id = NodeId.parse(f"{item.nodeid}@{group}")
    else:
        item.add_marker(pytest.mark.xdist_group(group))


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A fresh git repository with one commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# target\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


@pytest.fixture
def project(git_repo: Path):
    """An initialised GraphLemon project (a ProjectHandle) in a fresh git repo, as `graphlemon init` leaves it: with
    its skills repository seeded."""
    from graphlemon.project import init_project
    from graphlemon.skills.repo import SkillRepo

    handle = init_project(git_repo).project
    SkillRepo(handle.state_dir).ensure(handle.ledger)
    return handle


def run_cli(
    *args: str, cwd: Path | None = None, input: str | None = None, env: dict | None = None, timeout: float = 120
):
    """Run `python -m graphlemon ARGS` as a real process; returns CompletedProcess (text)."""
    return subprocess.run(
        [*GRAPHLEMON, *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def cli():
    return run_cli


def run_cli_in_process(*args: str) -> subprocess.CompletedProcess:
    """`graphlemon ARGS` through the program's own entry point (`graphlemon.entry.main`) in this process, its output
    and exit status caught: for a table of many cases whose process start-up a few real runs (`run_cli`) cover."""
    from graphlemon.entry import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return subprocess.CompletedProcess([*GRAPHLEMON, *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli_in_process():
    return run_cli_in_process


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """The session's one real Prefect server (≈20 s once, started by the first test that needs it)."""
    from prefect_stack import running_server

    with running_server(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


@pytest.fixture(scope="session")
def prefect_harness(prefect_server):
    """The session's server as this process's Prefect API. Request it only where a flow runs in the test's process."""
    from prefect_stack import current_api

    with current_api(prefect_server):
        yield


@pytest.fixture(scope="session")
def prefect_stack(prefect_server, tmp_path_factory):
    """On the session's server: the work pool `graphlemon`, the devloop, unit-loop and reports deployments made from
    a copy of this repository deleted before the workers start, and two process workers (≈15 s once,
    tests/prefect_stack.py). Tests tell their runs apart by run id and project. For @pytest.mark.slow tests."""
    from prefect_stack import deployed_from_a_deleted_copy

    with deployed_from_a_deleted_copy(prefect_server, tmp_path_factory.mktemp("deploying")) as stack:
        yield stack


# -- the browser tests' console: one console, registry and Chromium per test module ---------------------------------
@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """The module's own project registry (the console's list of projects) in a temporary config folder."""
    from graphlemon.console.project_registry import ProjectRegistry

    return ProjectRegistry(tmp_path_factory.mktemp("console-config"))


@pytest.fixture(scope="module")
def server(registry):
    """A console on 127.0.0.1 for the module, with a fixed token."""
    from graphlemon.console.app import ConsoleSettings
    from graphlemon.console.server import BackgroundServer

    srv = BackgroundServer(ConsoleSettings(token="t" * 32, registry=registry)).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    from browser_kit import launched_chromium

    yield from launched_chromium()


@pytest.fixture
def page(browser, request, tmp_path, server):
    """A page that opened the URL `graphlemon console` prints: it holds the token and may act."""
    from browser_kit import console_page

    yield from console_page(browser, request, tmp_path, server)
