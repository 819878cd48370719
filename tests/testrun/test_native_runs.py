"""go test and cargo test projects run for real (cargo builds once per session, in a temp target dir)."""

from __future__ import annotations

import shutil

import pytest

from graphlemon.testrun import run_tests

from .helpers import by_name, copy_fixture, statuses

pytestmark = pytest.mark.system


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed: run scripts/install-fixtures.sh (make test does)")


@pytest.fixture(scope="module")
def go_project(tmp_path_factory):
    require("go")
    return copy_fixture("go_project", tmp_path_factory.mktemp("go"))


@pytest.fixture(scope="module")
def cargo_built(tmp_path_factory):
    """One copy of the crate and one target dir for the module: the crate compiles once."""
    require("cargo")
    root = tmp_path_factory.mktemp("cargo")
    project = copy_fixture("cargo_project", root)
    env = {"CARGO_TARGET_DIR": str(root / "target")}
    return project, env, run_tests(project, env=env)


def test_go_json_report_subtests_skip_panic_and_build_failure(go_project):
    result = run_tests(go_project)
    assert result.framework == "go" and result.command == "go test -json ./..." and not result.ok
    st = statuses(result)
    assert st["TestSumEmpty"] == "passed" and st["TestSkipped"] == "skipped"
    assert st["TestSumTable/single_[one]_ünï_✓"] == "failed" and "TestSumTable" not in st  # parents are not cases
    plain = by_name(result, "TestSum")
    assert (plain.file, plain.line, plain.expected, plain.got) == ("calc_test.go", 13, "6", "3")
    table = by_name(result, "TestSumTable/single_[one]_ünï_✓")  # only the test's name says "sum": facts (issue 46)
    assert "5 expected, 0 produced" in table.hint and table.hint_confidence == "facts"
    panic = by_name(result, "TestCountsPanics")
    assert (panic.file, panic.line) == ("calc_test.go", 40)
    assert "nil map" in panic.message and "make()" in panic.hint and "calc.go:16" in panic.hint
    build = by_name(result, "example.com/calc/broken [build failed]")
    assert (build.file, build.line) == ("broken/broken.go", 4) and "cannot use" in build.message
    assert "compile" in build.hint
    assert '"Action"' not in result.output_tail and "--- FAIL: TestSum " in result.output_tail


GO_TWO_TESTS = """package twice

import "testing"

func Twice(n int) int { return n + n }

func TestTwicePasses(t *testing.T) {
	if Twice(2) != 4 {
		t.Fatal("2")
	}
}

func TestTwiceFails(t *testing.T) {
	if got := Twice(3); got != 7 {
		t.Errorf("Twice(3) = %d, want 7", got)
	}
}
"""


def test_go_text_without_v_states_no_passed_count(tmp_path):
    # `go test` without -v prints nothing for a passing test: its output proves the failure, not how many passed
    require("go")
    (tmp_path / "go.mod").write_text("module example.com/twice\n\ngo 1.19\n")
    (tmp_path / "twice_test.go").write_text(GO_TWO_TESTS)
    env = {"GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    quiet = run_tests(tmp_path, command="go test -timeout 30s ./...", env=env)
    assert quiet.framework == "go" and quiet.summary.failed == 1 and "TestTwiceFails" in statuses(quiet)
    assert not quiet.complete and quiet.summary.passed == 0
    assert any("number of passed tests is unknown" in w and "without -v or -json" in w for w in quiet.warnings)
    verbose = run_tests(tmp_path, command="go test -v -timeout 30s ./...", env=env)
    assert verbose.complete and not verbose.warnings, verbose.warnings
    assert (verbose.summary.passed, verbose.summary.failed) == (1, 1)


def test_go_targets_and_last_failed_map_to_packages_and_run(go_project):
    only = run_tests(go_project, [".", "TestSumEmpty"])
    assert only.command == "go test -json . -run TestSumEmpty"
    assert statuses(only) == {"TestSumEmpty": "passed"} and only.ok
    run_tests(go_project)
    again = run_tests(go_project, last_failed=True)
    assert "-run" not in again.command  # a package that did not build is rerun whole
    (go_project / "broken" / "broken.go").write_text("package broken\n\nfunc Value() int { return 1 }\n")
    run_tests(go_project, last_failed=True)
    third = run_tests(go_project, last_failed=True)
    assert "-run '^(?:TestSum|TestSumTable|TestCountsPanics)$'" in third.command
    assert "TestSumEmpty" not in statuses(third)


def test_cargo_panics_ignored_should_panic_and_integration_tests(cargo_built):
    _, _, result = cargo_built
    assert result.framework == "cargo" and result.exit_code == 101 and not result.ok
    st = statuses(result)
    assert st["tests::ignored_test"] == "skipped" and st["tests::blank_text_panics"] == "passed"
    assert st["tests::ac_07_ünïcode_name"] == "passed" and st["api_sum_passes"] == "passed"
    assert (result.summary.passed, result.summary.failed, result.summary.skipped) == (4, 3, 1)
    unwrap = by_name(result, "tests::first_word_of_blank_text")
    assert (unwrap.file, unwrap.line) == ("src/lib.rs", 11) and "unwrap()" in unwrap.hint
    assert_eq = by_name(result, "tests::sums_three_numbers")
    # assert_eq! names no expected side (expected/got stay null); the test's source does: `6` is a literal
    assert (assert_eq.expected, assert_eq.got) == (None, None) and "(3 where 6 is expected)" in assert_eq.hint
    integration = by_name(result, "api_sum_fails_with_a_message")
    assert (integration.file, integration.line, integration.expected, integration.got) == ("tests/api.rs", 9, "4", "2")


def test_cargo_filters_and_last_failed(cargo_built):
    project, env, _ = cargo_built
    by_name_filter = run_tests(project, ["sum_of_nothing"], env=env)
    assert statuses(by_name_filter) == {"tests::sum_of_nothing_is_zero": "passed"} and by_name_filter.ok
    integration_only = run_tests(project, ["tests/api.rs"], env=env)
    assert set(statuses(integration_only)) == {"api_sum_passes", "api_sum_fails_with_a_message"}
    again = run_tests(project, last_failed=True, env=env)
    assert again.command.startswith("cargo test --no-fail-fast -- --exact")
    assert {n for n, s in statuses(again).items()} == {
        "tests::first_word_of_blank_text", "tests::sums_three_numbers", "api_sum_fails_with_a_message",
    }  # fmt: skip


def test_cargo_compile_error_is_a_crash_with_the_location(tmp_path, cargo_built):
    _, env, _ = cargo_built
    project = copy_fixture("cargo_project", tmp_path)
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("    total\n}", '    "total"\n}', 1))
    result = run_tests(project, env={"CARGO_TARGET_DIR": str(tmp_path / "target")})
    assert result.crashed and not result.ok and result.summary.failed == 1
    failure = result.failures[0]
    assert failure.name == "cargo: build failed" and failure.message.startswith("error[E0308]")
    assert (failure.file, failure.line) == ("src/lib.rs", 7) and "compile" in failure.hint


DOC_LIB = """//! A crate whose doc tests fail three ways.
mod title;
pub use title::title;

/// Doubles.
///
/// ```
/// let x = doc_panics::double(2);
///
/// assert!(x == 5);
/// ```
pub fn double(x: i32) -> i32 {
    x * 2
}

/// Finds where a sentence ends.
///
/// ```
/// doc_panics::sentence_end("abc", 1);
/// ```
pub fn sentence_end(text: &str, offset: usize) -> usize {
    if offset >= text.len() - 1 {
        return offset;
    }
    panic!("index out of range: word offset {} not found (len {})", offset + 10, text.len())
}
"""
DOC_TITLE = """/// Title case.
///
/// ```
/// assert_eq!(doc_panics::title("ab cd"), "Ab Cd");
/// ```
pub fn title(text: &str) -> String {
    crate::sentence_end(text, 1);
    text.to_string()
}
"""


def test_a_doc_tests_panic_is_said_at_its_own_place(tmp_path):
    # cargo for real: a doc test's own `assert!` fails (a check of the test); two examples call code that panics, in
    # another file (src/lib.rs from src/title.rs's example) and in the same file outside the example: the panic's own
    # location is the fact, never "the code under test returned without panicking"
    require("cargo")
    (tmp_path / "src").mkdir()
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "doc_panics"\nversion = "0.1.0"\nedition = "2021"\n')
    (tmp_path / "src" / "lib.rs").write_text(DOC_LIB)
    (tmp_path / "src" / "title.rs").write_text(DOC_TITLE)
    result = run_tests(tmp_path, env={"CARGO_TARGET_DIR": str(tmp_path / "target"), "RUST_BACKTRACE": "0"})
    assert result.framework == "cargo" and result.summary.failed == 3, result
    own = by_name(result, "src/lib.rs - double (line 7)").hint
    assert own.startswith("The assertion `x == 5` failed in the doc test of `double` (its example at src/lib.rs:7)")
    other_file = by_name(result, "src/title.rs - title::title (line 3)").hint
    assert other_file == (
        "The code under test panicked in `sentence_end` (src/lib.rs:25) while the doc test of `title::title` ran (its "
        "example at src/title.rs:3): index out of range: word offset 11 not found (len 5)."
    ), other_file
    same_file = by_name(result, "src/lib.rs - sentence_end (line 18)").hint
    assert same_file.startswith("The code under test panicked in `sentence_end` (src/lib.rs:25) while the doc test of "
                                "`sentence_end` ran (its example at src/lib.rs:18)"), same_file  # fmt: skip
    assert not any("returned without panicking" in h for h in (other_file, same_file))
