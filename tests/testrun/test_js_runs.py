"""vitest, jest, mocha, node:test and npm test projects run for real (dependencies from committed lockfiles)."""

from __future__ import annotations

import json

import pytest

from graphlemon.testrun import run_tests

from .helpers import FIXTURES, alive, by_name, copy_fixture, statuses

pytestmark = pytest.mark.system


@pytest.fixture(autouse=True, scope="module")
def node_modules_installed():
    missing = [
        n for n in ("vitest_project", "jest_project", "mocha_project") if not (FIXTURES / n / "node_modules").is_dir()
    ]
    if missing:
        pytest.fail(f"JS fixture dependencies missing in {missing}: run scripts/install-fixtures.sh (make test does)")


@pytest.fixture(scope="module")
def vitest_run(tmp_path_factory):
    project = copy_fixture("vitest_project", tmp_path_factory.mktemp("vitest"))
    return project, run_tests(project)


def test_vitest_report_nested_describe_skip_todo_and_failures(vitest_run):
    _, result = vitest_run
    assert result.framework == "vitest" and not result.ok and not result.crashed
    st = statuses(result)
    assert st["app > add > adds two numbers"] == "passed"
    assert st["app > add > ünïcode name ✓ [brackets]"] == "passed"
    assert st["app > is skipped"] == "skipped" and st["app > is still to do"] == "skipped"
    assert st["AC-02 top level test passes"] == "passed"
    status = by_name(result, "app > answers 401 for an unknown user")
    assert (status.file, status.line, status.expected, status.got) == ("tests/app.test.js", 15, "401", "500")
    # statusFor(null) is a function's result, not a response's status: no HTTP exchange, so the facts only
    assert status.hint_confidence == "facts" and "401 expected, 500 produced" in status.hint
    undefined = by_name(result, "app > reads the title")
    assert "`length`" in undefined.hint and "src/app.js:6" in undefined.hint
    assert "key(s) 'b'" in by_name(result, "app > returns the whole object").hint
    s = result.summary
    assert s.total == s.passed + s.failed + s.skipped == len(result.cases)


def test_vitest_file_that_fails_to_import_is_a_failure(vitest_run):
    _, result = vitest_run
    broken = by_name(result, "tests/broken.test.js")
    assert "does-not-exist.js" in broken.message and "does-not-exist.js" in broken.hint


def test_vitest_unhandled_rejection_with_all_tests_green_is_not_ok(fixture_project):
    project = fixture_project("vitest_project")
    result = run_tests(project, ["tests/unhandled.test.js"])
    assert statuses(result)["passes but leaves a rejected promise behind"] == "passed"
    assert result.exit_code == 1 and not result.ok and not result.crashed
    assert result.summary.passed == 2 and result.summary.failed == 1
    failure = result.failures[0]
    assert failure.name == "vitest: unhandled rejection in tests/unhandled.test.js"
    assert (failure.file, failure.line) == ("tests/unhandled.test.js", 4)
    assert "late failure from a forgotten promise" in failure.message and "promise" in failure.hint


def test_vitest_name_pattern_and_last_failed_map_to_files_and_t(fixture_project):
    project = fixture_project("vitest_project")
    by_name_pattern = run_tests(project, ["tests/app.test.js", "adds two"])
    assert statuses(by_name_pattern) == {"app > add > adds two numbers": "passed"}  # filtered tests are not "skipped"
    assert by_name_pattern.ok
    first = run_tests(project, ["tests/app.test.js"])
    again = run_tests(project, last_failed=True)
    assert "-t" in again.command
    assert set(statuses(again)) == {c.name for c in first.cases if c.status == "failed"}
    assert again.summary.failed == first.summary.failed


def test_vitest_custom_command_falls_back_to_the_human_output(fixture_project):
    project = fixture_project("vitest_project")
    result = run_tests(project, command="./node_modules/.bin/vitest run tests/app.test.js")
    assert result.framework == "vitest"
    assert (result.summary.passed, result.summary.failed, result.summary.skipped) == (3, 3, 2)
    assert by_name(result, "app > answers 401 for an unknown user").line == 15


def test_jest_report_module_not_found_and_matcher_values(fixture_project):
    project = fixture_project("jest_project")
    result = run_tests(project)
    assert result.framework == "jest" and not result.ok
    st = statuses(result)
    assert st["login > with a known user > accepts the right password"] == "passed"
    assert st["login > is skipped"] == "skipped" and st["login > remembers the session"] == "skipped"
    missing = by_name(result, "__tests__/missing.test.js")
    assert "Cannot find module '../src/helper-that-does-not-exist'" in missing.message
    assert "helper-that-does-not-exist" in missing.hint
    unicode = by_name(result, "slugify > keeps words — ünïcode ✓ [x]")
    assert (unicode.expected, unicode.got) == ('"hello-world"', '"hello--world"')
    # one character added in the middle: the edit, named with both texts
    assert unicode.hint.startswith("The text has '-' added after 'hello-' ('hello--world' where 'hello-world' is")
    assert "The list lacks 'b'" in by_name(result, "slugify > returns the list of parts").hint
    unknown = by_name(result, "login > answers 401 for an unknown user")
    assert "`password`" in unknown.hint and "src/users.js:5" in unknown.hint


def test_jest_last_failed_and_targets(fixture_project):
    project = fixture_project("jest_project")
    run_tests(project)
    again = run_tests(project, last_failed=True)
    assert "__tests__/missing.test.js" in statuses(again)
    only = run_tests(project, ["__tests__/users.test.js", "makes a slug"])
    assert statuses(only) == {"slugify > AC-03 makes a slug": "passed"} and only.ok


def test_mocha_report_hooks_pending_and_values(fixture_project):
    project = fixture_project("mocha_project")
    result = run_tests(project)
    assert result.framework == "mocha" and not result.ok
    s = result.summary
    assert (s.passed, s.failed, s.skipped) == (2, 2, 2)
    price = by_name(result, "cart total adds every price")
    assert (price.file, price.line, price.expected, price.got) == ("test/cart.spec.js", 10, "5", "2")
    hook = by_name(result, 'cart with a broken setup "before each" hook for "never runs its body"')
    assert hook.message.startswith("error in setup") and "seed data missing" in hook.message
    assert "setup" in hook.hint
    grep = run_tests(project, ["empty cart"])
    assert statuses(grep) == {"cart total is zero for an empty cart": "passed"} and grep.ok


def test_node_test_subtests_nested_suites_and_a_broken_file(fixture_project):
    project = fixture_project("node_project")
    result = run_tests(project)
    assert result.framework == "node" and not result.ok
    st = statuses(result)
    assert st["AC-05 parent with subtests > first subtest passes"] == "passed"
    assert st["AC-05 parent with subtests > second subtest reads undefined"] == "failed"
    assert "AC-05 parent with subtests" not in st  # a parent failing only through its subtests is not a case
    assert st["shout > is skipped"] == "skipped" and st["shout > is still to do"] == "skipped"
    nested = by_name(result, "shout > nested > ünïcode ✓ [keeps] words")
    assert (nested.expected, nested.got) == ("[ 'a', 'bb', 'ccc' ]", "[ 'bb', 'ccc' ]")  # util.inspect
    broken = by_name(result, "test/broken.test.mjs")
    assert "ERR_MODULE_NOT_FOUND" in broken.message and "no-such-module.mjs" in broken.hint
    assert by_name(result, "shout > answers 404 for nothing").line == 10


def test_node_test_last_failed_reruns_by_name_pattern(fixture_project):
    project = fixture_project("node_project")
    (project / "test" / "broken.test.mjs").unlink()
    first = run_tests(project)
    again = run_tests(project, last_failed=True)
    assert "--test-name-pattern=" in again.command
    assert {n for n, s in statuses(again).items() if s == "failed"} == {
        c.name for c in first.cases if c.status == "failed"
    }
    assert "top level passes" not in statuses(again)


def test_node_test_hang_is_killed_without_orphans(fixture_project, tmp_path):
    project = fixture_project("node_hang")
    pid_file = tmp_path / "pids"
    result = run_tests(project, timeout=3, env={"HANG_PID_FILE": str(pid_file)})
    assert result.timed_out and not result.ok and result.summary.failed >= 1
    node_pid, child_pid = map(int, pid_file.read_text().split())
    assert not alive(node_pid) and not alive(child_pid)
    assert "did not finish within 3 s" in result.failures[-1].message


def test_npm_test_parses_the_scripts_output(fixture_project):
    project = fixture_project("npm_project")
    result = run_tests(project)
    # its test script is `node --test`: the script decides the runner, run in the package root with our reporter
    assert result.framework == "node" and result.command.startswith("node --test")
    assert (result.summary.passed, result.summary.failed, result.summary.skipped) == (1, 1, 1)
    failure = by_name(result, "multiplies")
    assert (failure.file, failure.line, failure.expected, failure.got) == ("test/math.test.js", 9, "7", "6")  # the assertion line, from our reporter
    assert json.loads(result.model_dump_json())["framework"] == "node"


def test_a_tap_stream_a_crash_cut_short_is_not_complete_and_names_the_test_it_stopped_in():
    """No plan line and no totals after the last result: node died mid-run (a crash after partial TAP output)."""
    from graphlemon.testrun.parsers.tap import parse_tap

    output = (
        "TAP version 13\n# merge\nok 1 should be equal\n# mutable\nnot ok 2 should be equal\n  ---\n"
        "    operator: equal\n    expected: 'baz'\n    actual:   'qux'\n    at: Test.<anonymous> (/p/test.js:61:12)\n"
        "  ...\n# null prototype\n/p/index.js:12\n    if (source.hasOwnProperty(key)) {\n               ^\n\n"
        "TypeError: source.hasOwnProperty is not a function\n    at extend (/p/index.js:12:24)\n"
        "    at Test.<anonymous> (/p/test.js:70:22)\n\nNode.js v20.20.2\n"
    )
    run = parse_tap(output)
    assert run.stopped.startswith("the TAP stream ended before its plan")
    assert [(c.name, c.status) for c in run.cases][-1] == ("null prototype", "failed")
    crash = run.failures[-1]
    assert crash.message.startswith("the test process stopped during this test: TypeError: source.hasOwnProperty")
    assert (crash.file, crash.line) == ("/p/test.js", 70)  # the frame in the stream's test file, not index.js:12
    finished = parse_tap("TAP version 13\n# a\nok 1 x\n\n1..1\n# tests 1\n# pass  1\n\n# ok\n")
    assert not finished.stopped and [c.status for c in finished.cases] == ["passed"]
    crashed_after = parse_tap(output.replace("# null prototype\n", ""))  # the crash comes in `mutable`, after its result
    assert crashed_after.failures[-1].name == "mutable > the test process stopped"
    short = parse_tap("TAP version 13\n1..3\n# a\nok 1 x\nok 2 y\n")  # the plan promised 3
    assert short.stopped and len(short.failures) == 0  # every announced test reported: none is named as stopped


def test_mocha_with_node_assert_reads_the_sides_from_the_tests_call_not_nodes_argument_names(fixture_project):
    """`assert.equal("FF", upper("ff"))`: node calls the first argument `actual`; the call shows the literal is the
    expected one (issue 46, "operand order assumed, not read")."""
    project = fixture_project("mocha_project")
    (project / "test" / "sides.spec.js").write_text(
        'const assert = require("assert");\nconst upper = (s) => s.toLowerCase();\n\n'
        'describe("sides", () => {\n  it("expected first", () => {\n    assert.equal("FF", upper("ff"));\n  });\n'
        '  it("actual first", () => {\n    assert.strictEqual(upper("ab"), "AB");\n  });\n});\n'
    )
    result = run_tests(project, ["sides"])
    first, second = by_name(result, "sides expected first"), by_name(result, "sides actual first")
    assert (first.expected, first.got) == ("FF", "ff") and "'ff' where 'FF' is expected" in first.hint
    assert (second.expected, second.got) == ("AB", "ab") and "'ab' where 'AB' is expected" in second.hint
