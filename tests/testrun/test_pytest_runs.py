"""pytest projects run for real: counting rules, failures, targets, last-failed, crashes, hangs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.testrun import run_tests

from .helpers import alive, by_name, copy_fixture, statuses

MIXED = "tests/test_mixed.py"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    project = copy_fixture("pytest_mixed", tmp_path_factory.mktemp("mixed"))
    return project, run_tests(project)


@pytest.mark.system
def test_mixed_suite_counts_every_outcome(mixed):
    _, result = mixed
    s = result.summary
    # 6 passed (xpass included), 2 skipped (skip + xfail), 7 failed (3 assertions, a setup error,
    # a teardown error, a file that fails to import, a parametrized case)
    assert (s.passed, s.failed, s.skipped) == (6, 7, 2)
    assert s.total == s.passed + s.failed + s.skipped == len(result.cases)
    assert not result.ok and not result.crashed and not result.timed_out
    assert result.exit_code == 1 and result.framework == "pytest"
    st = statuses(result)
    assert st[f"{MIXED}::test_xfail"] == "skipped" and st[f"{MIXED}::test_skipped"] == "skipped"
    assert st[f"{MIXED}::test_xpass"] == "passed"
    assert st[f"{MIXED}::test_ac_01_login_works"] == "passed"  # passed names are kept for coverage


@pytest.mark.system
def test_parametrized_ids_with_brackets_spaces_and_unicode(mixed):
    _, result = mixed
    st = statuses(result)
    assert st[f"{MIXED}::test_params[with space]"] == "passed"
    assert st[f"{MIXED}::test_params[[brackets]]"] == "failed"
    assert any(name.startswith(f"{MIXED}::test_params[") and "code" in name for name in st)


@pytest.mark.system
def test_failures_carry_location_expected_got_and_a_specific_hint(mixed):
    _, result = mixed
    status = by_name(result, f"{MIXED}::test_status_code")
    assert (status.file, status.line) == (MIXED, 12)
    assert (status.expected, status.got) == ("401", "500")
    assert "500 (a server error) where 401 (a client error)" in status.hint and "HTTP exchange" in status.hint
    division = by_name(result, f"{MIXED}::test_average_of_nothing")
    assert "ZeroDivisionError" in division.message
    assert "src/calc.py:6" in division.hint
    in_class = by_name(result, f"{MIXED}::TestGroup::test_in_class_fails")
    assert "key(s) 'b'" in in_class.hint and in_class.hint_confidence == "specific"
    for failure in result.failures:
        assert failure.hint and "fix the bug" not in failure.hint.lower()
        assert failure.detail  # the full error text stays available in Python


@pytest.mark.system
def test_setup_teardown_and_collection_errors_are_failures(mixed):
    _, result = mixed
    setup = by_name(result, f"{MIXED}::test_setup_error")
    assert setup.message.startswith("error in setup") and "database fixture could not connect" in setup.message
    assert "setup" in setup.hint and "conftest.py:11" in setup.hint
    teardown = by_name(result, f"{MIXED}::test_teardown_error")
    assert teardown.message.startswith("error in teardown")
    broken = by_name(result, "tests/test_broken_import.py")
    assert broken.file == "tests/test_broken_import.py"
    assert "not_a_real_module" in broken.message and "not_a_real_module" in broken.hint


@pytest.mark.system
def test_json_is_exactly_the_contract(mixed):
    _, result = mixed
    data = json.loads(result.model_dump_json())
    assert list(data) == ["ok", "framework", "command", "exit_code", "duration_ms", "timed_out", "crashed",
                          "summary", "failures", "output_tail", "counts_source", "unparsed", "warnings",
                          "subtests", "complete"]  # fmt: skip
    assert list(data["summary"]) == ["total", "passed", "failed", "skipped"]
    assert all(list(f) == ["name", "file", "line", "message", "expected", "got", "hint", "difference_at", "subtest",
                                 "hint_confidence"]
               for f in data["failures"])  # fmt: skip
    assert data["counts_source"] == "report" and data["unparsed"] is False and data["subtests"] is None
    assert data["complete"] is True and {f["hint_confidence"] for f in data["failures"]} <= {"specific", "facts"}
    assert len(data["output_tail"]) <= 3100


@pytest.mark.system
def test_targets_node_ids_folders_and_name_patterns(fixture_project):
    project = fixture_project("pytest_mixed")
    by_id = run_tests(project, [f"{MIXED}::test_params[[brackets]]", f"{MIXED}::test_params[with space]"])
    assert statuses(by_id) == {
        f"{MIXED}::test_params[[brackets]]": "failed",
        f"{MIXED}::test_params[with space]": "passed",
    }
    by_pattern = run_tests(project, ["test_add_passes", "test_in_class"])
    assert set(statuses(by_pattern)) == {f"{MIXED}::test_add_passes", f"{MIXED}::TestGroup::test_in_class",
                                         f"{MIXED}::TestGroup::test_in_class_fails",
                                         "tests/test_broken_import.py"}  # a collection error shows whatever -k says  # fmt: skip
    absolute = run_tests(project, [str(project / MIXED) + "::test_add_passes"])
    assert absolute.ok and absolute.summary.total == 1


@pytest.mark.system
def test_last_failed_reruns_only_the_failures(fixture_project):
    project = fixture_project("pytest_mixed")
    first = run_tests(project)
    store = project / ".graphlemon" / "testrun" / "last_failed.json"
    assert store.is_file()
    rerun = run_tests(project, last_failed=True)
    assert {c.name for c in rerun.cases} == {c.name for c in first.cases if c.status == "failed"}
    assert rerun.summary.failed == first.summary.failed and rerun.summary.passed == 0
    # fix one failure: it drops out of the store, the rest stays
    test_file = project / MIXED
    test_file.write_text(test_file.read_text().replace("response_status = 500", "response_status = 401"))
    fixed = run_tests(project, last_failed=True)
    assert statuses(fixed)[f"{MIXED}::test_status_code"] == "passed"
    stored = json.loads(store.read_text())["frameworks"]["pytest"]["."]
    assert f"{MIXED}::test_status_code" not in stored and len(stored) == first.summary.failed - 1


@pytest.mark.system
def test_last_failed_with_nothing_failed_runs_everything(fixture_project):
    project = fixture_project("pytest_noisy")
    result = run_tests(project, ["tests/test_noisy.py::test_passes"], last_failed=True)
    assert result.ok and result.summary.total == 1


@pytest.mark.system
def test_conftest_crash_is_a_crash_with_the_error_text(fixture_project):
    result = run_tests(fixture_project("pytest_conftest_crash"))
    assert result.crashed and not result.ok and result.exit_code == 4
    assert result.summary.failed == 1 and result.summary.total == 1
    failure = result.failures[0]
    assert failure.file == "conftest.py" and "JSONDecodeError" in failure.message
    assert "conftest.py" in failure.hint and "conftest.py:3" in failure.hint


@pytest.mark.system
def test_empty_suite_is_not_ok_and_its_failing_exit_is_a_failure_of_the_run(fixture_project):
    result = run_tests(fixture_project("pytest_empty"))
    assert not result.ok and result.exit_code == 5 and "no tests ran" in result.output_tail
    # pytest's exit 5 is not 0 and no test explains it: a failure of the run that says why
    assert [f.name for f in result.failures] == ["pytest: run failed"] and "no tests ran" in result.failures[0].message


@pytest.mark.system
def test_5000_coloured_lines_are_cut_to_a_clean_tail(fixture_project):
    result = run_tests(fixture_project("pytest_noisy"))
    assert "\x1b" not in result.output_tail and "\r" not in result.output_tail
    assert len(result.output_tail) <= 3100 and "chars cut by graphlemon" in result.output_tail
    assert "line 4999 red progress" in result.output_tail and "1 failed, 1 passed" in result.output_tail
    failure = result.failures[0]
    assert (failure.expected, failure.got) == ("'totals'", "'total'")
    assert "\x1b" not in failure.message


@pytest.mark.system
def test_hang_is_killed_with_its_child_and_partial_results_kept(fixture_project, tmp_path):
    project = fixture_project("pytest_hang")
    pid_file = tmp_path / "pids"
    result = run_tests(project, timeout=4, env={"HANG_PID_FILE": str(pid_file)})
    pytest_pid, child_pid = map(int, pid_file.read_text().split())
    assert not alive(pytest_pid) and not alive(child_pid)
    assert result.timed_out and not result.ok and result.exit_code is not None and result.exit_code < 0
    assert statuses(result) == {
        "tests/test_hang.py::test_quick": "passed",
        "tests/test_hang.py::test_hangs_with_a_child": "failed",
    }
    hang = result.failures[0]
    assert hang.name == "tests/test_hang.py::test_hangs_with_a_child" and hang.line == 12
    assert "did not finish within 4 s" in hang.message and "killed" in hang.hint
    assert "timed out after 4 s" in result.output_tail


@pytest.mark.system
def test_custom_command_is_parsed_when_the_framework_is_known(fixture_project):
    project = fixture_project("pytest_mixed")
    result = run_tests(project, command="python -m pytest -q tests/test_mixed.py -k 'add or status'")
    assert result.framework == "pytest" and result.command.startswith("python -m pytest -q")
    assert statuses(result) == {f"{MIXED}::test_add_passes": "passed", f"{MIXED}::test_status_code": "failed"}


@pytest.mark.system
def test_a_command_that_sets_pythonpath_itself_is_still_read_test_by_test(fixture_project):
    """`PYTHONPATH=src python -m pytest`: the command's PYTHONPATH hides graphlemon's report plugin, so pytest stops
    before any test; the run is repeated without the plugin, read from pytest's output, and says so."""
    project = fixture_project("pytest_mixed")
    result = run_tests(project, command="PYTHONPATH=src python -m pytest -q tests/test_mixed.py -k 'add or status'")
    assert [f.name for f in result.failures] == [f"{MIXED}::test_status_code"]  # -q prints no passing names
    assert (result.summary.passed, result.summary.failed) == (1, 1) and result.failures[0].got == "500"
    assert any("report plugin could not be imported" in w for w in result.warnings)
    # a command that keeps graphlemon's PYTHONPATH loads the plugin: one run, nothing to say
    kept = run_tests(project, command="PYTHONPATH=src:$PYTHONPATH python -m pytest -q tests/test_mixed.py -k add")
    assert statuses(kept) == {f"{MIXED}::test_add_passes": "passed"} and not kept.warnings


@pytest.mark.system
def test_custom_command_of_an_unknown_runner_degrades_to_exit_code_and_tail(fixture_project):
    project = fixture_project("pytest_empty")
    result = run_tests(project, command="echo 'checking'; echo 'suite: 4 passed, 1 failed'; exit 3")
    assert result.framework is None and result.exit_code == 3 and not result.ok
    assert (result.summary.passed, result.summary.failed) == (4, 1)
    silent = run_tests(project, command="echo all good")
    assert silent.exit_code == 0 and silent.summary.total == 0 and not silent.ok
    assert "all good" in silent.output_tail


@pytest.mark.system
def test_missing_command_is_a_crash_not_an_exception(fixture_project):
    project = fixture_project("pytest_empty")
    result = run_tests(project, command="definitely-not-a-command-xyz --run")
    assert not result.ok and result.exit_code == 127
    assert result.summary.failed == 1 and result.crashed


@pytest.mark.system
def test_secrets_are_removed_from_the_child_environment(fixture_project, monkeypatch, tmp_path):
    project = fixture_project("pytest_empty")
    dump = tmp_path / "env.json"
    (project / "tests" / "test_env.py").write_text(
        f"import json, os\n\ndef test_env():\n    json.dump(dict(os.environ), open({str(dump)!r}, 'w'))\n"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("MY_APP_SECRET", "s3")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws")
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    result = run_tests(project, env={"EXTRA_FOR_TESTS": "given"})
    assert result.ok
    seen = json.loads(dump.read_text())
    assert not {"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_APP_SECRET", "AWS_SECRET_ACCESS_KEY"} & set(seen)
    assert seen["HARMLESS_SETTING"] == "kept" and seen["EXTRA_FOR_TESTS"] == "given"
    assert Path(seen["PWD"] if "PWD" in seen and seen["PWD"] == str(project) else project) == project


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"framework": "tap"}, ErrorCode.UNKNOWN_FRAMEWORK),
        ({"timeout": 0}, ErrorCode.INVALID_PARAM),
        ({"timeout": float("nan")}, ErrorCode.INVALID_PARAM),
        ({"command": "   "}, ErrorCode.INVALID_PARAM),
        ({"targets": ["--rootdir=/"]}, ErrorCode.INVALID_PARAM),
        ({"targets": ["../../etc/passwd"]}, ErrorCode.INVALID_PARAM),
        ({"targets": ["tests/missing_test.py"]}, ErrorCode.INVALID_PARAM),
        ({"targets": [""]}, ErrorCode.INVALID_PARAM),
        ({"targets": ["name with space"]}, ErrorCode.INVALID_PARAM),  # not a valid pytest -k term
        ({"command": "pytest", "targets": ["tests"]}, ErrorCode.INVALID_PARAM),
        ({"command": "pytest", "last_failed": True}, ErrorCode.INVALID_PARAM),
        ({"env": {"A=B": "x"}}, ErrorCode.INVALID_PARAM),
        ({"env": {"OK": "nul\x00"}}, ErrorCode.INVALID_PARAM),
    ],
)
def test_bad_input_is_refused_before_anything_runs(fixture_project, kwargs, code):
    project = fixture_project("pytest_empty")
    with pytest.raises(GraphLemonError) as err:
        run_tests(project, **kwargs)
    assert err.value.code == code and err.value.exit_code == 2
    assert not (project / ".graphlemon").exists()


def test_missing_project_and_undetectable_project(tmp_path):
    with pytest.raises(GraphLemonError) as missing:
        run_tests(tmp_path / "nope")
    assert missing.value.code == ErrorCode.PROJECT_NOT_FOUND
    (tmp_path / "empty").mkdir()
    with pytest.raises(GraphLemonError) as unknown:
        run_tests(tmp_path / "empty")
    assert unknown.value.code == ErrorCode.UNKNOWN_FRAMEWORK and "--framework" in unknown.value.message


@pytest.mark.system
def test_child_runs_in_the_project_folder(fixture_project, tmp_path):
    project = fixture_project("pytest_empty")
    result = run_tests(project, command=f"pwd > {tmp_path / 'cwd'}")
    assert result.exit_code == 0
    assert Path((tmp_path / "cwd").read_text().strip()) == project.resolve()
    assert os.environ.get("NO_COLOR") is None or True
