"""Detection, targets, environment, process groups, text helpers, fallbacks, hints, last-failed store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.testrun.assertions import extract_expected_got
from graphlemon.testrun.detect import detect_framework, normalise_framework
from graphlemon.testrun.environment import child_env
from graphlemon.testrun.hints import build_hint
from graphlemon.testrun.lastfailed import LastFailedStore
from graphlemon.testrun.output_text import head_and_tail, strip_ansi
from graphlemon.testrun.parsers.jest_json import parse_jest_json
from graphlemon.testrun.parsers.jest_text import parse_jest_text
from graphlemon.testrun.parsers.node_events import parse_node_events
from graphlemon.testrun.parsers.node_text import parse_node_text
from graphlemon.testrun.parsers.pytest_report import parse_pytest_report
from graphlemon.testrun.parsers.pytest_text import parse_pytest_text
from graphlemon.testrun.parsers.vitest_text import parse_vitest_text
from graphlemon.testrun.process import run_process
from graphlemon.testrun.result_models import TestCase, TestFailure
from graphlemon.testrun.targets import split_targets

from .helpers import FIXTURES, alive

SAMPLES = FIXTURES / "reports"


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"package.json": '{"devDependencies": {"vitest": "3", "jest": "29"}}'}, "vitest"),
        ({"package.json": '{"devDependencies": {"jest": "29"}}'}, "jest"),
        ({"package.json": '{"dependencies": {"mocha": "10"}}'}, "mocha"),
        ({"package.json": '{"scripts": {"test": "tap test/*.js"}}'}, "npm-test"),
        (
            {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}', "test/a.js": ""},
            "node",
        ),
        ({"pyproject.toml": ""}, "pytest"),
        ({"tox.ini": ""}, "pytest"),
        ({"tests/test_x.py": ""}, "pytest"),
        ({"go.mod": "module x"}, "go"),
        ({"Cargo.toml": ""}, "cargo"),
        ({"math.test.mjs": ""}, "node"),
        ({"package.json": "{not json", "conftest.py": ""}, "pytest"),
    ],
)
def test_detection_rules(tmp_path, files, expected):
    for name, text in files.items():
        write(tmp_path / name, text)
    assert detect_framework(tmp_path) == (expected, tmp_path)


def test_monorepo_nearest_config_wins_and_override_finds_its_folder(tmp_path):
    write(tmp_path / "web" / "package.json", '{"devDependencies": {"vitest": "3"}}')
    write(tmp_path / "api" / "svc" / "pyproject.toml")
    write(tmp_path / "node_modules" / "x" / "go.mod")  # never searched
    assert detect_framework(tmp_path) == ("vitest", tmp_path / "web")
    assert detect_framework(tmp_path, "pytest") == ("pytest", tmp_path / "api" / "svc")
    write(tmp_path / "pytest.ini")
    assert detect_framework(tmp_path) == ("pytest", tmp_path)


def test_framework_names_and_aliases():
    assert normalise_framework("node:test") == "node" and normalise_framework("Go Test") == "go"
    assert normalise_framework("cargo-test") == "cargo" and normalise_framework("PYTEST") == "pytest"
    with pytest.raises(GraphLemonError) as err:
        normalise_framework("ava")
    assert err.value.code == ErrorCode.UNKNOWN_FRAMEWORK


# --- targets -------------------------------------------------------------------------------


def test_targets_are_split_into_paths_and_name_patterns(tmp_path):
    write(tmp_path / "tests" / "test_a.py")
    write(tmp_path / "web" / "a.test.js")
    targets = split_targets(
        ["tests/test_a.py::TestX::test_y[a b]", "tests", "login works", "./..."], tmp_path, tmp_path
    )
    assert targets.paths == ["tests/test_a.py::TestX::test_y[a b]", "tests"]
    assert targets.patterns == ["login works", "./..."]
    from_sub = split_targets(["web/a.test.js", str(tmp_path / "web")], tmp_path, tmp_path / "web")
    assert from_sub.paths == ["a.test.js", "."]


@pytest.mark.parametrize(
    "bad", ["", "  ", "-k", "--rootdir=/", "../x", "/etc/passwd", "a\x00b", "x\ny", "nope.py", "gone.py::t"]
)
def test_hostile_targets_are_refused(tmp_path, bad):
    with pytest.raises(GraphLemonError) as err:
        split_targets([bad], tmp_path, tmp_path)
    assert err.value.code == ErrorCode.INVALID_PARAM


def test_a_symlink_out_of_the_project_is_refused(tmp_path):
    (tmp_path / "outside").mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "escape").symlink_to(tmp_path / "outside")
    with pytest.raises(GraphLemonError):
        split_targets(["escape"], project, project)


# --- environment and process ---------------------------------------------------------------


def test_child_env_strips_secrets_keeps_the_rest():
    env = child_env({"MY_TOKEN": "deliberate"}, base={"ANTHROPIC_API_KEY": "a", "GITHUB_TOKEN": "b", "DB_PASSWORD": "c",
                                                     "my_secret": "d", "AWS_SECRET_ACCESS_KEY": "e", "PATH": "/bin",
                                                     "KEYBOARD": "us", "FORCE_COLOR": "1"})  # fmt: skip
    assert env == {"PATH": "/bin", "KEYBOARD": "us", "NO_COLOR": "1", "MY_TOKEN": "deliberate"}


@pytest.mark.system
def test_timeout_kills_grandchildren_even_when_they_start_their_own_session(tmp_path):
    script = (
        "import subprocess, sys, time, os\n"
        "a = subprocess.Popen(['sleep', '600'])\n"
        "b = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        f"open({str(tmp_path / 'pids')!r}, 'w').write(f'{{a.pid}} {{b.pid}}')\n"
        "time.sleep(600)\n"
    )
    started = time.monotonic()
    outcome = run_process([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ),
                          output_path=tmp_path / "out", timeout=1.5)  # fmt: skip
    assert outcome.timed_out and time.monotonic() - started < 10
    assert not any(alive(int(p)) for p in (tmp_path / "pids").read_text().split())


@pytest.mark.system
def test_cancel_event_stops_the_run(tmp_path):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    outcome = run_process(
        ["sleep", "30"], cwd=tmp_path, env=dict(os.environ), output_path=tmp_path / "out", timeout=60, cancel=cancel
    )
    assert outcome.cancelled and not outcome.timed_out and outcome.exit_code is not None and outcome.exit_code < 0
    assert outcome.duration_ms < 10_000


@pytest.mark.system
def test_background_process_left_by_a_passing_run_is_killed(tmp_path):
    outcome = run_process(["sh", "-c", f"sleep 600 & echo $! > {tmp_path / 'pid'}; exit 0"], cwd=tmp_path,
                          env=dict(os.environ), output_path=tmp_path / "out", timeout=30)  # fmt: skip
    assert outcome.exit_code == 0
    assert not alive(int((tmp_path / "pid").read_text()))


@pytest.mark.system
def test_missing_executable_is_reported_not_raised(tmp_path):
    outcome = run_process(["no-such-binary-xyz"], cwd=tmp_path, env={}, output_path=tmp_path / "out", timeout=5)
    assert outcome.exit_code is None and "no-such-binary-xyz" in (outcome.start_error or "")


# --- text --------------------------------------------------------------------------------------


def test_ansi_and_carriage_returns_are_stripped_and_other_control_chars_shown_escaped():
    assert (
        strip_ansi("\x1b[1;31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07\n50%\r100%\r\n\x07ok")
        == "red link\n100%\n\\x07ok"
    )
    # a NUL byte a value printed is part of it: shown, never dropped (go's `bad: %s` of a buffer)
    assert strip_ansi("bad: \x00world\tx\x7f\n") == "bad: \\x00world\tx\\x7f\n"
    assert strip_ansi("plain\ttext\n") == "plain\ttext\n"  # no control character: the text is unchanged


def test_head_and_tail_keeps_both_ends_with_a_marker():
    text = "".join(f"line {i}\n" for i in range(5000))
    cut = head_and_tail(text, 3000)
    assert cut.startswith("line 0\n") and cut.endswith("line 4999\n") and "chars cut by graphlemon" in cut
    assert len(cut) < 3100 and head_and_tail("short", 3000) == "short" and head_and_tail(text, 0) == ""


@pytest.mark.parametrize(
    ("text", "expected", "got"),
    [
        ("Expected: 401\nReceived: 500", "401", "500"),
        ("AssertionError: expected 500 to be 401 // Object.is equality", "401", "500"),
        # node:assert's actual/expected are argument positions: sided only by the test's source (js_source)
        ("Expected values to be strictly equal:\n\n500 !== 401\n", None, None),
        # pytest's `assert left == right`: its right side is "expected" only by position (the printed statement,
        # `settled`, may say which one is)
        ("assert 500 == 401\n +  where 500 = resp.status_code", None, None),
        ("assertion `left == right` failed\n  left: 3\n right: 6", None, None),  # assert_eq! has no expected side
        ("calc_test.go:13: Sum = 3; got 3, want 6", "6", "3"),
        ("expected 4, got 2", "4", "2"),
        ("AssertionError: 4 != 3", None, None),  # unittest assertEqual(first, second): no side
        ("AssertionError: False is not true", "True", "False"),  # unittest assertTrue
        ("AssertionError: 0 is not false", "False", "0"),  # unittest assertFalse
        ("assert False\n +  where False = is_even(4)", "True", "False"),  # pytest, a bare check
        ("assert not True\n +  where True = is_even(3)", "False", "True"),
        ("assert '[x]' != '[x]'", None, None),
        ("no values here", None, None),
    ],
)
def test_expected_and_got_in_every_dialect(text, expected, got):
    assert extract_expected_got(text) == (expected, got)


# --- text fallbacks agree with the reports -------------------------------------------------


@pytest.mark.parametrize(
    ("report_parser", "report", "text_parser", "output"),
    [
        (parse_pytest_report, "pytest.report.txt", parse_pytest_text, "pytest.output.txt"),
        (parse_jest_json, "vitest.report.txt", parse_vitest_text, "vitest.output.txt"),
        (parse_jest_json, "jest.report.txt", parse_jest_text, "jest.output.txt"),
        (parse_node_events, "node.report.txt", parse_node_text, "node-tap.output.txt"),
    ],
)
def test_text_fallback_finds_the_same_failing_tests_as_the_report(report_parser, report, text_parser, output):
    from_report = report_parser((SAMPLES / report).read_text())
    from_text = text_parser((SAMPLES / output).read_text())

    def leaf(name: str) -> str:
        return name.replace(" > ", " ").split(" ")[-1].split("/")[-1]

    assert {leaf(f.name) for f in from_text.failures} >= {
        leaf(f.name) for f in from_report.failures if "/" not in f.name[:1]
    }
    counts = from_text.counts
    if counts is not None:
        assert counts.failed >= len([c for c in from_report.cases if c.status == "failed"]) - 1


# --- hints -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "detail", "expected", "got", "must"),
    [
        (
            "TypeError: Cannot read properties of undefined (reading 'title')",
            "    at h (/p/src/server.js:12:5)",
            None,
            None,
            ["`title`", "src/server.js:12"],
        ),
        ("AttributeError: 'NoneType' object has no attribute 'id'", "", None, None, ["None", "`id`"]),
        (
            "Error: expect(received).toBe(expected)",
            "> 12 |     expect(res.status).toBe(401);",
            "401",
            "500",
            ["401", "500", "500 (a server error) where 401"],
        ),
        ("status", ">       assert resp.status_code == 400", "400", "500", ["400", "500 (a server error)"]),
        ("response status", "", "404", "200", ["404"]),
        ("response status", "", "200", "401", ["401 (a client error) where 200"]),
        ("SqliteError: UNIQUE constraint failed: users.email", "", None, None, ["UNIQUE", "users.email"]),
        ("sqlite3.IntegrityError: NOT NULL constraint failed: posts.title", "", None, None, ["posts.title", "NULL"]),
        ("Error: SQLITE_CONSTRAINT: FOREIGN KEY constraint failed", "", None, None, ["parent"]),
        ("TypeError: data and hash arguments required", "at bcrypt.compare", None, None, ["bcrypt's compare", "null/undefined"]),
        ("Error: Test timed out in 5000ms.", "", None, None, ["time limit"]),
        ("Error: Timeout of 2000ms exceeded.", "", None, None, ["time limit"]),
        ("ModuleNotFoundError: No module named 'requests'", "", None, None, ["`requests`", "cannot be found"]),
        ("Cannot find module './db' from 'src/app.js'", "", None, None, ["`./db`", "does not exist"]),
        ("ImportError: cannot import name 'parse' from 'app.util'", "", None, None, ["`app.util`", "`parse`"]),
        ("ReferenceError: fetchUser is not defined", "", None, None, ["`fetchUser`"]),
        ("TypeError: getUser is not a function", "", None, None, ["`getUser`", "another value"]),
        ("TypeError: this._input.match is not a function", "", None, None, ["`this._input` is not a string"]),
        ("TypeError: rows.map is not a function", "", None, None, ["`rows` is not an array"]),
        ("KeyError: 'email'", "", None, None, ["'email'", "no key"]),
        (
            "TypeError: create() missing 1 required positional argument: 'name'",
            "",
            None,
            None,
            ["`create`", "signature"],
        ),
        ("connect ECONNREFUSED 127.0.0.1:5432", "", None, None, ["127.0.0.1:5432"]),
        ("assert 0.30000000000000004 == 0.3", "", "0.3", "0.30000000000000004", ["within one part in a million", "differ by 4e-17"]),
        ("assert 9 == 10", ">       assert len(items) == 10", "10", "9", ["Off by one"]),
        ("x", "", "'Hello'", "'hello'", ["letter case"]),
        ("x", "", "[1, 2, 3]", "[3, 2, 1]", ["order"]),
        ("x", "", "[1, 2]", "[]", ["empty list"]),
        ("x", "", "{'a': 1, 'b': 2}", "{'a': 1}", ["key(s) 'b'"]),
        ("x", "", "5", "None", ["nothing"]),
        ("x", "", "True", "False", ["other way"]),
        ("x", "", "5", "'5'", ["another type"]),
        ("ValueError: invalid literal for int() with base 10: 'abc'", "", None, None, ["'abc'"]),
        (
            "ZeroDivisionError: division by zero",
            'File "/p/src/stats.py", line 4, in mean',
            None,
            None,
            ["src/stats.py:4"],
        ),
        ("panic: runtime error: invalid memory address or nil pointer dereference", "", None, None, ["nil pointer"]),
        ("error in setup: RuntimeError: db down", "", None, None, ["setup", "never ran", "RuntimeError"]),
        ("fixture 'client' not found", "", None, None, ["`client`", "conftest.py"]),
        ("AssertionError", "", None, None, ["tests/t.py:7"]),
        (
            "assert False\n +  where False = is_even(4)",
            "",
            "True",
            "False",
            ["`is_even(4)` returned False", "other way"],
        ),
        ("assert 5 == 6\n +  where 5 = add(2, 2)", "", "6", "5", ["`add(2, 2)` returned 5", "expects 6", "Facts only"]),
        ("assert [] == [1]\n +  where [] = parse('x')", "", None, None, ["`parse('x')` returned []", "Facts only"]),
        (
            "assert 500 == 401\n +  where 500 = status_for(None)",
            "",
            "401",
            "500",
            ["returned 500", "401", "Facts only"],
        ),
        ("assert 500 == 401\n +  where 500 = <Response [500]>.status_code", "", "401", "500", ["500 (a server error) where 401"]),
    ],
)
def test_hint_rules_are_specific(message, detail, expected, got, must):
    failure = TestFailure(
        name="t", file="tests/t.py", line=7, message=message, detail=detail, expected=expected, got=got
    )
    hint = build_hint(failure, Path("/p"))
    for fragment in must:
        assert fragment in hint, f"{fragment!r} not in hint {hint!r}"
    assert "fix the bug" not in hint.lower() and hint != f"expected {expected} got {got}"


# --- last-failed store ------------------------------------------------------------------------


def test_store_adds_failures_drops_passes_and_survives_a_corrupt_file(tmp_path, caplog):
    store = LastFailedStore(tmp_path)
    store.record(
        "pytest",
        ".",
        [
            TestCase(name="a", status="failed", selector="t.py::a"),
            TestCase(name="b", status="failed", selector="t.py::b"),
        ],
    )
    store.record("pytest", ".", [TestCase(name="a", status="passed", selector="t.py::a")])
    assert store.failed("pytest", ".") == ["t.py::b"]
    assert store.failed("vitest", ".") == [] and store.failed("pytest", "sub") == []
    store.path.write_text("{torn")
    assert store.failed("pytest", ".") == [] and "unreadable" in caplog.text
    store.record("pytest", ".", [TestCase(name="c", status="failed", selector="t.py::c")])
    assert json.loads(store.path.read_text())["frameworks"]["pytest"]["."] == ["t.py::c"]


def test_file_level_failure_is_forgotten_once_the_file_runs_tests(tmp_path):
    store = LastFailedStore(tmp_path)
    store.record("vitest", ".", [TestCase(name="tests/b.test.js", status="failed", selector="tests/b.test.js\t")])
    store.record("vitest", ".", [TestCase(name="b works", status="passed", selector="tests/b.test.js\tb works")])
    assert store.failed("vitest", ".") == []


@pytest.mark.system
def test_cli_runs_in_a_plain_folder_without_graphlemon_state(cli, tmp_path):
    write(tmp_path / "tests" / "test_ok.py", "def test_ok():\n    assert True\n")
    proc = cli("test", "--json", "-p", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert (tmp_path / ".graphlemon" / "testrun" / "last_failed.json").is_file()
    assert subprocess.run(["git", "status"], cwd=tmp_path, capture_output=True).returncode != 0  # not even a git repo


def test_a_pytest_run_that_could_not_import_the_report_plugin_is_repeated_without_it(tmp_path):
    from graphlemon.testrun.frameworks.pytest import PLUGIN_MODULE, REPORT_ENV, Pytest

    pytest_ = Pytest()
    first = pytest_.custom_invocation("PYTHONPATH=src python -m pytest", tmp_path, tmp_path)
    stopped = (f"ImportError: Error importing plugin \"{PLUGIN_MODULE}\": No module named '{PLUGIN_MODULE}'\n")
    plain = pytest_.without_report(first, None, stopped)
    assert plain is not None and plain.argv == first.argv and plain.report is None
    assert REPORT_ENV not in plain.env and PLUGIN_MODULE not in plain.env.get("PYTEST_PLUGINS", "")
    # the plugin loaded (a report), or pytest stopped for another reason: nothing to repeat
    assert pytest_.without_report(first, '{"event": "session"}\n', stopped) is None
    assert pytest_.without_report(first, None, "ImportError: Error importing plugin \"xdist\"\n") is None


_PYTEST_CUT = (
    "____ test_color[white-\\x1b[97mtext\\x1b[0m] ____\n\n"
    ">       assert colored(\"text\", color=color) == expected\n"
    "E       AssertionError: assert '\\x1b[37mtext\\x1b[0m' == '\\x1b[97mtext\\x1b[0m'\n"
    "E         - \x1b[97mtext\x1b[0m\n\ntests/t.py:92: AssertionError\n"
    "==== short test summary info ====\n"
    "FAILED tests/t.py::test_color[white-\\x1b[97mtext\\x1b[0m] - Asser...\n"
    "FAILED tests/t.py::test_b - assert 1 == 2\n"
    "==== 2 failed in 0.1s ====\n"
)


def test_pytest_summary_line_cut_to_the_terminal_gives_way_to_the_sections_lines():
    """pytest cuts the short summary's message to the terminal's width (`- Asser...`): the failure's message is
    then its section's `E` lines (before: `Asser...`, and a hint that the values were not reported)."""
    cut, whole = parse_pytest_text(_PYTEST_CUT).failures
    assert cut.name == "tests/t.py::test_color[white-\\x1b[97mtext\\x1b[0m]" and cut.line == 92
    assert cut.message.startswith("AssertionError: assert '\\x1b[37mtext\\x1b[0m' == '\\x1b[97mtext"), cut.message
    assert whole.message == "assert 1 == 2"  # a message not cut (and no section) is the summary's own
    alone = parse_pytest_text("FAILED tests/t.py::test_c - Asser...\n1 failed in 0.1s\n").failures[0]
    assert alone.message == "Asser..."  # nothing fuller printed: the cut line is all there is


def test_pytest_quiet_summary_line_gives_the_counts():
    """`-q` prints `1 failed, 1 passed, 12 deselected in 0.62s` without the `===` frame: the counts are read."""
    run = parse_pytest_text("F.\nFAILED tests/t.py::test_a - assert 1 == 2\n1 failed, 1 passed, 12 deselected in 0.62s\n")
    assert run.counts is not None and (run.counts.passed, run.counts.failed) == (1, 1)
    assert parse_pytest_text("something printed 3 passed in 1s by a test\n").counts is None
