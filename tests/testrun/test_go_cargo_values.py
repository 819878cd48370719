"""Issue 23 items 4 and 5 on minimal real projects: Go's message conventions and timeouts, cargo's assert vs panic."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.go_json import parse_go_json
from graphlemon.testrun.parsers.go_text import parse_go_text

from .helpers import by_name, copy_fixture, statuses


def _require(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed: run scripts/install-fixtures.sh (make test does)")


@pytest.fixture(scope="module")
def go_values(tmp_path_factory):
    _require("go")
    return copy_fixture("go_values", tmp_path_factory.mktemp("go-values"))


def _check_go_values(result) -> None:
    assert not result.ok and result.summary.failed == 6 and result.summary.passed == 0
    multi = by_name(result, "TestDifferenceMultiLine")  # a multi-line t.Errorf is kept whole
    assert multi.message == "Difference(a, b):\n\tgot  XXYZ\n\twant XXY"
    assert (multi.expected, multi.got) == ("XXY", "XXYZ") and "extra content at the end" in multi.hint
    length = by_name(result, "TestLenConvention")  # `Len() = 3, want 2`
    assert (length.expected, length.got) == ("2", "3") and "Off by one" in length.hint
    greet = by_name(result, "TestGotWantConvention")
    assert (greet.expected, greet.got) == ('"Hello, Ada"', '"hello, Ada"') and "letter case" in greet.hint
    blocks = by_name(result, "TestGotWantBlocks")  # `got:\n...\nwant:\n...`
    assert (blocks.expected, blocks.got) == ("a;\nb", "a;\nb;") and "extra content" in blocks.hint
    diff = by_name(result, "TestCmpStyleDiff")  # go-cmp's `(-want +got)`: both sides rebuilt from the diff
    assert "Port:  8080," in diff.expected and "Port:  8081," in diff.got and "8081" not in diff.expected
    # a port number one away is no boundary: no "off by one" from the difference of two numbers alone
    assert diff.hint.startswith("Field `Port` differs (8080 wanted, 8081 produced)") and "Off by one" not in diff.hint
    hang = by_name(result, "TestWaitHangs")  # go's -timeout panic names the test, not the package folder
    assert (hang.file, hang.line) == ("values_test.go", 46)
    assert hang.message.startswith(
        "panic: test timed out after 2s: TestWaitHangs was still running, in values.Wait at values.go:"
    )
    assert "`values.Wait`" in hang.hint and "-timeout (2s)" in hang.hint
    assert not any("example.com" in f.name for f in result.failures)
    for failure in result.failures:
        assert "does not hold: print the value" not in failure.hint  # none generic


@pytest.mark.system
def test_go_conventions_and_timeout_from_go_test_json(go_values):
    result = run_tests(go_values, command="go test -json -timeout 2s ./...")
    assert result.counts_source == "report"
    _check_go_values(result)
    assert statuses(result)["TestWaitHangs"] == "failed"


@pytest.mark.system
def test_go_conventions_and_timeout_from_go_test_text(go_values):
    result = run_tests(go_values, command="go test -timeout 2s ./...")
    assert result.counts_source == "text"
    _check_go_values(result)


def _event(action: str, test: str = "", output: str = "") -> str:
    event = {"Action": action, "Package": "example.com/m/pkg"}
    if test:
        event["Test"] = test
    if output:
        event["Output"] = output
    return json.dumps(event)


def test_go_120_timeout_lists_the_running_tests_under_the_package():
    """go >= 1.20 prints `running tests:` and test2json puts the panic on the package: the leaf test is named."""
    dump = (
        "panic: test timed out after 1s\nrunning tests:\n\tTestOuter (1s)\n\tTestOuter/slow_case (1s)\n\n"
        "goroutine 7 [sleep]:\nexample.com/m/pkg.block(...)\n\t/src/m/pkg/pkg.go:9\n"
        "example.com/m/pkg.TestOuter.func1(0xc0)\n\t/src/m/pkg/pkg_test.go:12 +0x1d\n"
        "example.com/m/pkg.TestOuter(0xc0)\n\t/src/m/pkg/pkg_test.go:14 +0x2f\n"
    )
    report = "\n".join([
        _event("run", "TestFast"), _event("pass", "TestFast"),
        _event("run", "TestOuter"), _event("run", "TestOuter/slow_case"),
        *(_event("output", output=line + "\n") for line in dump.splitlines()),
        _event("output", output="FAIL\texample.com/m/pkg\t1.012s\n"), _event("fail"),
    ])  # fmt: skip
    run = parse_go_json(report, module="example.com/m")
    assert [(c.name, c.status) for c in run.cases] == [("TestFast", "passed"), ("TestOuter/slow_case", "failed")]
    (failure,) = run.failures
    assert failure.name == "TestOuter/slow_case" and (failure.file, failure.line) == ("pkg/pkg_test.go", 14)
    assert "still running, in pkg.block at pkg.go:9" in failure.message
    assert run.running is None
    assert run.stopped == "go test's -timeout (1s) stopped the test binary"  # so the run is not complete


@pytest.fixture(scope="module")
def cargo_asserts(tmp_path_factory):
    _require("cargo")
    root = tmp_path_factory.mktemp("cargo-asserts")
    project = copy_fixture("cargo_asserts", root)
    return run_tests(project, env={"CARGO_TARGET_DIR": str(root / "target")})


@pytest.mark.system
def test_cargo_tells_a_failed_test_assertion_from_a_panic_in_the_code(cargo_asserts):
    result = cargo_asserts
    assert (result.summary.passed, result.summary.failed) == (2, 3)
    helper = by_name(result, "tests::caret_accepts_a_newer_minor")  # assert! in a #[cfg(test)] helper
    assert (helper.file, helper.line) == ("src/lib.rs", 40)
    assert helper.hint.startswith(
        "The assertion `caret_matches(&r, &v)` failed in test helper `assert_caret` (src/lib.rs:40): the test's own check"
    )
    assert "returned without panicking" in helper.hint and "handle that case" not in helper.hint
    integration = by_name(result, "caret_matches_the_same_major")  # a helper in tests/common/mod.rs
    assert (integration.file, integration.line) == ("tests/common/mod.rs", 6)
    assert "message `did not match 1.4.0`" in integration.hint and "`assert_match_all`" in integration.hint
    assert "handle that case" not in integration.hint
    code = by_name(result, "tests::patch_component")  # panic!() in the code under test
    assert (code.file, code.line) == ("src/lib.rs", 30)
    assert code.hint.startswith("The code under test panicked in `component` (src/lib.rs:30)")
    assert "component index 2 is out of range" in code.hint and "instead" not in code.hint


RUST_SOURCE = """\
pub fn f(x: u8) -> u8 {
    assert!(x < 10, "{{not a block");
    x
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod more {
    fn check(v: u8) {
        assert!(v == 1);
    }
}

pub fn after() { panic!("late") }

#[test]
fn loose_test() {
    assert!(false);
}
"""


def test_rust_place_reads_cfg_test_modules_and_test_functions(tmp_path):
    from graphlemon.testrun.rust_source import rust_place

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text(RUST_SOURCE)
    place = lambda line: rust_place(tmp_path, "src/lib.rs", line)  # noqa: E731
    assert place(2).in_test_code is False and place(2).function == "f"
    assert place(12).in_test_code is True and place(12).function == "check"
    assert place(16).in_test_code is False and place(16).function == "after"  # the cfg(test) module closed
    assert place(20).in_test_code is True and place(20).function == "loose_test"
    assert rust_place(tmp_path, "tests/common/mod.rs", 3).in_test_code is True  # unreadable, but under tests/
    assert rust_place(tmp_path, "src/parser/tests.rs", 3).in_test_code is True
    assert rust_place(tmp_path, "/rustc/abc/library/core/src/option.rs", 3) is None


def test_node_assert_diff_gives_both_values_when_node_leaves_them_out():
    """node:test's TAP has no `expected`/`actual` when one side is undefined or a function: its diff has both."""
    from graphlemon.testrun.assertions import node_assert_diff
    from graphlemon.testrun.hints import build_hint
    from graphlemon.testrun.parsers.common import make_failure

    error = ("Expected values to be strictly equal:\n+ actual - expected\n\n+ undefined\n- <ref *1> [Function] {\n"
             "-   name: 'hello-world'\n- }")  # fmt: skip
    assert node_assert_diff(error) == ("<ref *1> [Function] {\n  name: 'hello-world'\n}", "undefined")
    assert node_assert_diff("+ actual - expected\n\n+ 'ab'\n- 'aB'\n   ^\n") == ("'aB'", "'ab'")
    failure = make_failure("t", message=error)
    # the diff's legend names node's argument positions: with no test source to side them, they stay node's
    assert failure.got is None and failure.operands.first == "undefined"
    assert "actual argument: null/undefined, expected argument: <ref *1>" in build_hint(failure)
    missing = make_failure("npm-test: run failed", message="> pkg@1.0.0 test:typescript\n> tsd\nsh: 1: tsd: not found")
    assert build_hint(missing).startswith("`tsd` is not found where the test script runs it")


GO_CMP = Path(__file__).resolve().parent / "corpus" / ".cache" / "go-cmp-0.5.9"
GO_CMP_TEST = """\
package gcd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

type Config struct {
	Name string
	Port int
	Tags []string
}

func TestConfig(t *testing.T) {
	want, got := Config{"web", 8080, []string{"a"}}, Config{"web", 8081, []string{"a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse() mismatch (-want +got):\\n%s", diff)
	}
}

func TestSlice(t *testing.T) {
	if diff := cmp.Diff([]string{"a", "b"}, []string{"a", "c"}); diff != "" {
		t.Errorf("Values (-want +got):\\n%s", diff)
	}
}
"""


@pytest.mark.system
def test_real_go_cmp_diffs_give_both_sides_and_the_changed_field(tmp_path):
    """cmp.Diff itself (Debian's go-cmp from the corpus, offline), with its randomised non-breaking spaces."""
    _require("go")
    if not (GO_CMP / ".graphlemon-corpus-ok").is_file():
        pytest.fail("the real-suite corpus is not installed: run `make fixtures`")
    (tmp_path / "go.mod").write_text(
        f"module example.com/gcd\n\ngo 1.19\n\nrequire github.com/google/go-cmp v0.5.9\n\n"
        f"replace github.com/google/go-cmp => {GO_CMP}\n"
    )
    (tmp_path / "x_test.go").write_text(GO_CMP_TEST)
    result = run_tests(tmp_path, env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"})
    assert result.summary.failed == 2, result.output_tail
    config = by_name(result, "TestConfig")
    assert "Port: 8080," in config.expected and "Port: 8081," in config.got
    assert config.hint.startswith("Field `Port` differs (8080 wanted, 8081 produced)")
    values = by_name(result, "TestSlice")
    assert values.hint.startswith('The diff\'s first change: `"b",` wanted, `"c",` produced.')


def test_a_timeout_whose_test_has_no_stack_fails_the_package_and_says_the_test_is_unknown():
    """go < 1.20 names a stopped test only by its goroutine's stack; one busy on another thread has none."""
    output = (
        "--- FAIL: TestLen (0.00s)\n    values_test.go:19: Len() = 3, want 2\npanic: test timed out after 2s\n\n"
        "goroutine 19 [running]:\ntesting.(*M).startAlarm.func1()\n\t/usr/lib/go-1.19/src/testing/testing.go:2036\n\n"
        "goroutine 9 [running]:\n\tgoroutine running on other thread; stack unavailable\n"
        "created by testing.(*T).Run\n\t/usr/lib/go-1.19/src/testing/testing.go:1493 +0x35f\n"
        "FAIL\texample.com/values\t2.008s\nFAIL\n"
    )
    run = parse_go_text(output)
    assert [(c.name, c.status, c.selector) for c in run.cases] == [
        ("TestLen", "failed", ".\tTestLen"), ("example.com/values: timed out", "failed", ".\t")]  # fmt: skip
    timed_out = run.failures[-1]
    assert timed_out.message.startswith("panic: test timed out after 2s; go's output names no running test")
    assert run.stopped == "go test's -timeout (2s) stopped the test binary"
    hint = hint_for(timed_out)
    assert hint.text.startswith("go test's -timeout (2s) stopped the test binary while a test was still running")
    assert "does not say which" in hint.text


def test_with_v_the_test_a_timeout_stopped_is_the_last_one_announced_and_not_ended():
    """An Example has no `Test…` frame in the dump, but `-v` announced it: it is named, never "unknown"."""
    output = (
        "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   ExampleWidth\npanic: test timed out after 5s\n\n"
        "goroutine 7 [running]:\n\tgoroutine running on other thread; stack unavailable\n"
        "FAIL\texample.com/w\t5.011s\nFAIL\n"
    )
    run = parse_go_text(output)
    assert [(c.name, c.status) for c in run.cases] == [("TestA", "passed"), ("ExampleWidth", "failed")]
    (failure,) = run.failures
    assert failure.message.startswith("panic: test timed out after 5s: ExampleWidth was still running")
    assert hint_for(failure).text.startswith("go test's -timeout (5s) stopped `ExampleWidth`")


def test_cargo_a_test_fails_at_its_own_last_panic_not_one_it_caught_and_a_crate_doc_test_at_its_example():
    from graphlemon.testrun.parsers.cargo_text import parse_cargo_text

    output = (
        "running 1 test\ntest tests::guarded ... FAILED\n\nfailures:\n\n---- tests::guarded stdout ----\n\n"
        "thread 'tests::guarded' (35) panicked at src/lib.rs:510:13:\nfailure\n\n"  # RUST_BACKTRACE=0: no note
        "thread 'tests::guarded' (35) panicked at src/lib.rs:512:9:\nassertion `left == right` failed\n  left: 1\n"
        " right: 0\n\nfailures:\n    tests::guarded\n\ntest result: FAILED. 0 passed; 1 failed\n\n"
        "   Doc-tests scopeguard\n\nrunning 1 test\ntest src/lib.rs - (line 37) ... FAILED\n\nfailures:\n\n"
        "---- src/lib.rs - (line 37) stdout ----\nTest executable failed (exit status: 101).\n\nstderr:\n\n"
        "thread 'main' (36) panicked at src/lib.rs:17:9:\nassertion `left == right` failed\n  left: 1\n right: 0\n\n"
        "failures:\n    src/lib.rs - (line 37)\n\ntest result: FAILED. 0 passed; 1 failed\n"
    )
    caught, doc = parse_cargo_text(output).failures
    assert (caught.file, caught.line) == ("src/lib.rs", 512) and caught.message.startswith("assertion `left == right`")
    assert (doc.file, doc.line) == ("src/lib.rs", 37)  # 17 is a line of the test rustdoc generated
    assert "src/lib.rs:17" not in hint_for(doc).text


def test_a_parallel_test_paused_at_the_timeout_is_not_what_the_alarm_stopped():
    """`t.Parallel()` parks the test until the serial ones end: its goroutine is in the dump, its body never ran."""
    dump = ("panic: test timed out after 5s\n\ngoroutine 40 [chan receive]:\ntesting.(*T).Parallel(0xc0)\n"
            "\t/usr/lib/go-1.19/src/testing/testing.go:1271 +0x1c5\nexample.com/w.TestLater(0xc0)\n"
            "\t/src/w/w_test.go:400 +0x33\n\ngoroutine 47 [runnable]:\nexample.com/w.Width(...)\n\t/src/w/w.go:9\n"
            "example.com/w.TestJoiner(0xc1)\n\t/src/w/w_test.go:20 +0x2f\n")  # fmt: skip
    text = ("=== RUN   TestLater\n=== PAUSE TestLater\n=== RUN   TestJoiner\n" + dump + "FAIL\texample.com/w\t5.0s\n")
    assert [c.name for c in parse_go_text(text).cases] == ["TestJoiner"]
    events = [_event("run", "TestLater"), _event("pause", "TestLater"), _event("run", "TestJoiner"),
              *(_event("output", output=line + "\n") for line in dump.splitlines()),
              _event("output", output="FAIL\texample.com/m/pkg\t5.0s\n"), _event("fail")]  # fmt: skip
    assert [c.name for c in parse_go_json("\n".join(events), module="example.com/m").cases] == ["TestJoiner"]


def test_a_value_holding_a_nul_byte_is_quoted_with_its_escape_in_the_message_and_the_hint():
    """go printed `bad: \\x00world` (a raw NUL byte first): the failure and its hint keep it, escaped, instead of
    stating the other value «bad: world»."""
    from graphlemon.testrun.output_text import strip_ansi

    output = strip_ansi(
        "=== RUN   TestBuffer_LongWrite\n    circbuf_test.go:73: bad: \x00world\n--- FAIL: TestBuffer_LongWrite (0.00s)\n"
        "FAIL\nFAIL\texample.com/circbuf\t0.002s\nFAIL\n"
    )
    (failure,) = parse_go_text(output).failures
    assert failure.message == "bad: \\x00world"
    assert "«bad: \\x00world»" in hint_for(failure).text
    # a report read without the output's cleaning (go test -json) holds the raw character: the quote escapes it
    (raw,) = parse_go_json("\n".join([
        _event("run", "TestA"), _event("output", "TestA", "    c_test.go:9: bad: \x00ld\n"), _event("fail", "TestA"),
    ])).failures  # fmt: skip
    assert raw.message == "bad: \x00ld" and "«bad: \\x00ld»" in hint_for(raw).text


def test_a_message_without_control_characters_is_quoted_unchanged():
    output = (
        "=== RUN   TestFull\n    circbuf_test.go:51: bad: [1 2]\n--- FAIL: TestFull (0.00s)\n"
        "FAIL\nFAIL\texample.com/circbuf\t0.002s\nFAIL\n"
    )
    (failure,) = parse_go_text(output).failures
    hint = hint_for(failure).text
    assert failure.message == "bad: [1 2]" and "«bad: [1 2]»" in hint and "\\x" not in hint


def _go_failure(*message_lines: str):
    lines = "".join(f"    x_test.go:{9 + i}: {line}\n" if i == 0 else f"        {line}\n"
                    for i, line in enumerate(message_lines))  # fmt: skip
    output = f"=== RUN   TestX\n{lines}--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample.com/x\t0.002s\nFAIL\n"
    (failure,) = parse_go_text(output).failures
    return failure


def test_several_expected_got_pairs_are_read_as_the_first_pair_never_mixed():
    """A loop printed `expected %q` / `got %q` per case: the values are the first pair's, as printed together (never
    the first got beside a later expected), and the hint says how many other pairs followed."""
    failure = _go_failure('expected "a\\nb"', 'got "a\\n  b"', "", 'expected "c\\n\\nd"', 'got "c\\n\\n  d"',
                          'expected "e"', 'got "e "')  # fmt: skip
    assert (failure.expected, failure.got) == ('"a\\nb"', '"a\\n  b"')
    hint = hint_for(failure)
    assert "c\\n\\nd" not in hint.text.split("The whole message")[0]
    assert "2 other expected/got pairs" in hint.text
    # got above want, twice: the first two lines are the pair
    failure = _go_failure("got 3", "want 4", "got 5", "want 6")
    assert (failure.expected, failure.got) == ("4", "3")
    assert "1 other expected/got pair after" in hint_for(failure).text


def test_labelled_lines_that_are_no_pair_give_no_values():
    """Two `got` lines before any `expected`: which got goes with the expected is not certain, so neither is read."""
    failure = _go_failure('got "a"', 'got "b"', 'expected "c"')
    assert (failure.expected, failure.got) == (None, None)
    assert "other expected/got pair" not in hint_for(failure).text


def test_one_expected_got_pair_is_read_as_before_and_no_other_pairs_are_told():
    failure = _go_failure('expected "hello\\nhow"', 'got "hello\\n  how"')
    assert (failure.expected, failure.got) == ('"hello\\nhow"', '"hello\\n  how"')
    assert "other expected/got pair" not in hint_for(failure).text


def test_a_number_is_quoted_as_go_printed_it_not_as_read():
    """go printed `NaN != 10.0`: the facts say `NaN` (and `+Inf`), never the reading's `nan`/`inf`."""
    assert "first: NaN, second: 10.0" in hint_for(_go_failure("NaN != 10.0")).text
    assert "first: +Inf, second: 1.5" in hint_for(_go_failure("+Inf != 1.5")).text
    # numbers printed as they read are shown as before
    assert "first: 3, second: 4" in hint_for(_go_failure("3 != 4")).text


def test_a_whole_pair_on_each_line_is_not_cut_as_several_labelled_lines():
    """`Expected '2 hours' but got 'About an hour'` per line: each line is a pair of its own, read as before."""
    from graphlemon.testrun.output_text import labelled_pairs

    assert labelled_pairs("Expected '2 hours' but got 'an hour'\nExpected '4 hours' but got '3 hours'") is None


def test_a_call_printed_with_its_result_settles_the_sides_only_for_whole_values():
    """`Min() => -10 != -10.001`: the call's result (after `=>`) is what the code produced, the other the wanted one;
    read in the first line only, and only when each side is one whole value."""
    failure = _go_failure("Min() => -10 != -10.001", "Median() => 3 != 2.5")
    assert (failure.expected, failure.got) == ("-10.001", "-10")
    failure = _go_failure("Max([1.0 2.0 5.0]) => 4.0 != 5.0")
    assert (failure.expected, failure.got) == ("5.0", "4.0")
    for unread in ("F() => a b != c", "Q2 39 != 37.5", "F() => 3 != 3"):
        assert (_go_failure(unread).expected, _go_failure(unread).got) == (None, None), unread


def test_an_examples_printed_diff_is_its_data_not_the_runners_diff():
    """An Example whose output is itself a diff (`+`/`-` lines under a `(-got +want)` header): got and want are two
    printed texts compared as wholes, never read as a diff whose marked lines are the sides."""
    block = "Diff: (-got +want)\n {{\n  Value: 1,\n{} Next: <#1> {{\n{} Next: {{\n }}"
    output = (
        "=== RUN   ExampleCompare\n--- FAIL: ExampleCompare (0.00s)\n"
        f"got:\n{block.format('+', '-')}\nwant:\n{block.format('-', '+')}\n"
        "FAIL\nexit status 1\nFAIL\texample.com/d\t0.01s\n"
    )
    (failure,) = parse_go_text(output).failures
    assert (failure.expected, failure.got) == (block.format("-", "+"), block.format("+", "-"))  # each block whole
    hint = hint_for(failure)
    assert "diff's first change" not in hint.text and "wanted" not in hint.text
    assert "(line 4, column 1)" in hint.text  # where the two printed texts first differ


def test_a_diff_the_test_itself_prints_is_still_read_as_its_diff():
    failure = _go_failure("Parse() mismatch (-want +got):", "  Name: \"\",", "- Age: 42,", "+ Age: 24,")
    assert (failure.expected, failure.got) == ('Name: "",\nAge: 42,', 'Name: "",\nAge: 24,')
    assert hint_for(failure).text.endswith("""'Name: "",\\nAge: 24,' where 'Name: "",\\nAge: 42,' is expected.""")


def test_a_test_is_its_packages_the_same_name_in_two_packages_is_two_tests():
    """`go test -v ./...`: diff's TestDiff passes with subtests, pretty's TestDiff (no subtests) fails. A test's
    identity is package + name: pretty's is no parent of diff's subtests, and its failure is not lost."""
    output = (
        "=== RUN   TestDiff\n=== RUN   TestDiff/empty\n--- PASS: TestDiff (0.00s)\n    --- PASS: TestDiff/empty (0.00s)\n"
        "PASS\nok  \texample.com/m/diff\t0.003s\n"
        "=== RUN   TestDiff\n    public_test.go:67: basic struct: got 1, want 2\n--- FAIL: TestDiff (0.00s)\n"
        "=== RUN   TestOther\n--- PASS: TestOther (0.00s)\nFAIL\nFAIL\texample.com/m/pretty\t0.004s\nFAIL\n"
    )
    run = parse_go_text(output, "example.com/m")
    assert [(c.name, c.status, c.selector) for c in run.cases] == [
        ("TestDiff/empty", "passed", "diff\tTestDiff/empty"), ("TestDiff", "failed", "pretty\tTestDiff"),
        ("TestOther", "passed", "pretty\tTestOther")]  # fmt: skip
    (failure,) = run.failures
    assert (failure.name, failure.file, failure.line, failure.expected, failure.got) == (
        "TestDiff", "pretty/public_test.go", 67, "2", "1")
    # one package, the module's root: a parent of subtests is still no case, and names and files are as before
    single = parse_go_text(output.split("PASS\nok")[0] + "FAIL\nFAIL\texample.com/m\t0.003s\n", "example.com/m")
    assert [(c.name, c.selector) for c in single.cases] == [("TestDiff/empty", ".\tTestDiff/empty")]


_PANIC_DUMP = (
    "panic: runtime error: index out of range [1] with length 1 [recovered]\n"
    "\tpanic: runtime error: index out of range [1] with length 1\n\ngoroutine 5 [running]:\n"
    "testing.tRunner.func1.2({0x52ad20, 0xc000020090})\n\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e\n"
    "panic({0x52ad20, 0xc000020090})\n\t/usr/lib/go-1.19/src/runtime/panic.go:884 +0x212\n"
    "example.com/h.Expand({0x536f57?, 0x5?})\n\t/src/h/homedir.go:67 +0x125\n"
    "example.com/h.TestExpand(0xc0000076c0)\n\t/src/h/homedir_test.go:108 +0x267\n"
    "testing.tRunner(0xc0000076c0, 0x5428f8)\n\t/usr/lib/go-1.19/src/testing/testing.go:1446 +0x10b\n"
)


def test_a_tests_panic_is_its_message_placed_at_the_tests_frame_with_the_raise_site_named():
    """A panic, not a t.Errorf: the message is the panic's, the place the deepest frame in a test file (where the test
    called in), the code under test's frame named as where it was raised, in go test text and -json alike."""
    text = f"=== RUN   TestExpand\n--- FAIL: TestExpand (0.00s)\n{_PANIC_DUMP}FAIL\texample.com/h\t0.090s\nFAIL\n"
    events = "\n".join([*(_event("output", "TestExpand", line + "\n") for line in _PANIC_DUMP.splitlines()),
                        _event("fail", "TestExpand")])  # fmt: skip
    for run in (parse_go_text(text), parse_go_json(events)):
        (failure,) = run.failures
        assert (failure.file, failure.line) == ("/src/h/homedir_test.go", 108)
        assert failure.message == ("panic: runtime error: index out of range [1] with length 1\n"
                                   "raised in h.Expand (homedir.go, line 67)")  # fmt: skip
        hint = hint_for(failure)
        assert hint.confidence == "specific" and "(index out of range [1] with length 1) (at /src/h/homedir.go:67)" in hint.text, hint


def test_a_panic_in_the_test_itself_names_no_other_site_and_a_logged_message_stays_the_message():
    own = _PANIC_DUMP.replace("example.com/h.Expand({0x536f57?, 0x5?})\n\t/src/h/homedir.go:67 +0x125\n", "")
    text = f"=== RUN   TestExpand\n--- FAIL: TestExpand (0.00s)\n{own}FAIL\texample.com/h\t0.090s\nFAIL\n"
    (failure,) = parse_go_text(text).failures
    assert failure.message == "panic: runtime error: index out of range [1] with length 1"  # no "raised in"
    logged = text.replace("--- FAIL: TestExpand (0.00s)\n", "    homedir_test.go:99: got 1, want 2\n--- FAIL: TestExpand (0.00s)\n")
    (failure,) = parse_go_text(logged).failures
    assert (failure.message, failure.file, failure.line) == ("got 1, want 2", "homedir_test.go", 99)


def test_a_call_compared_with_another_call_at_bang_equals_is_no_pair_of_values_its_got_want_words_are():
    """`#21. Match(`ab[c]`, `abc`) != path.Match(...). Got false, <nil> want true, <nil>`: the `!=` sits between a call
    with text before it and a sentence, so it splits no two values; the message's `Got X want Y` names the sides
    (Go's multi-value `false, <nil>` produced, `true, <nil>` wanted)."""
    failure = _go_failure("#21. Match(`ab[c]`, `abc`) = false, <nil> want true, <nil>",
                          "#21. Match(`ab[c]`, `abc`) != path.Match(...). Got false, <nil> want true, <nil>")  # fmt: skip
    assert (failure.expected, failure.got) == ("true, <nil>", "false, <nil>")
    text = hint_for(failure).text
    assert "does not say which one is expected" not in text and "first: #21" not in text
    # without got/want words the `!=` of a sentence gives no values at all (the message stays whole as a fact)
    failure = _go_failure("#21. Match(`ab[c]`, `abc`) != path.Match(...) for this pattern")
    assert (failure.expected, failure.got, failure.operands) == (None, None, None)


def test_bang_equals_between_two_whole_reprs_still_gives_both_values_without_sides():
    """The rule must not fire where each side of `!=` is one printed value, a call's repr included (unittest's
    `Point(x=1, y=2) != Point(x=1, y=3)`, an object's `<…>`, a prefixed literal)."""
    from graphlemon.testrun.assertions import compared_in

    for first, second in (("Point(x=1, y=2)", "Point(x=1, y=3)"), ("<Foo at 0x1>", "<Foo at 0x2>"), ("b'a b'", "b'a c'")):
        found = compared_in(f"AssertionError: {first} != {second}")
        assert found is not None and (found.first, found.second, found.expected_at) == (first, second, None)
    assert compared_in("AssertionError: f(1) and g(2) != 3") is None  # two calls with text between: not one value


def test_unittests_long_message_after_the_second_value_is_not_part_of_it():
    from graphlemon.testrun.assertions import compared_in

    found = compared_in("AssertionError: 3 != 4 : some symbols appear more than once in __all__")
    assert found is not None and (found.first, found.second) == ("3", "4")
    found = compared_in("AssertionError: 'a : b' != 'a : c'")  # inside one literal: the value stays whole
    assert found is not None and (found.first, found.second) == ("'a : b'", "'a : c'")


_PANICKED = ("=== RUN   TestA\n    p_test.go:5: bad\n--- FAIL: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\n"
             "panic: runtime error: index out of range [3] with length 0 [recovered]\n"
             "\tpanic: runtime error: index out of range [3] with length 0\n\ngoroutine 6 [running]:\n"
             "example.com/p/p.TestB(0x0?)\n\t/src/p/p_test.go:6 +0x1d\nexit status 2\nFAIL\texample.com/p/p\t0.006s\n")
_ENDED = "=== RUN   TestA\n    ok_test.go:5: bad\n--- FAIL: TestA (0.00s)\n=== RUN   TestC\n--- PASS: TestC (0.00s)\nFAIL\n"


def test_a_panic_that_kills_the_test_binary_makes_the_run_incomplete_in_text_and_json():
    """A test's panic ends go's test binary (no `PASS`/`FAIL` line of its own before `FAIL pkg`): the tests after it
    never ran and the output does not say whether there were any, so the run is not complete."""
    stopped = parse_go_text(_PANICKED + "FAIL\n").stopped
    assert stopped.startswith("a panic (`panic: runtime error: index out of range [3] with length 0`) stopped")
    events = [{"Action": "run", "Package": "example.com/p/p", "Test": "TestB"}]
    events += [{"Action": "output", "Package": "example.com/p/p", "Test": "TestB", "Output": line + "\n"}
               for line in _PANICKED.split("\n")[3:-3]]  # fmt: skip
    events += [{"Action": "fail", "Package": "example.com/p/p", "Test": "TestB"},
               {"Action": "output", "Package": "example.com/p/p", "Output": "FAIL\texample.com/p/p\t0.006s\n"},
               {"Action": "fail", "Package": "example.com/p/p"}]  # fmt: skip
    assert "stopped the test binary of example.com/p/p" in parse_go_json("\n".join(map(json.dumps, events))).stopped


def test_a_failing_package_whose_binary_printed_its_own_end_is_complete():
    """The rule must not fire on a binary that ran to its end (its bare `FAIL` line), beside a killed one or alone."""
    alone = parse_go_text(_ENDED + "FAIL\texample.com/p/ok\t0.005s\nFAIL\n")
    assert alone.stopped == "" and len(alone.failures) == 1
    events = [{"Action": "run", "Package": "example.com/p/ok", "Test": "TestA"},
              {"Action": "fail", "Package": "example.com/p/ok", "Test": "TestA"},
              {"Action": "output", "Package": "example.com/p/ok", "Output": "FAIL\n"},
              {"Action": "fail", "Package": "example.com/p/ok"}]  # fmt: skip
    assert parse_go_json("\n".join(map(json.dumps, events))).stopped == ""
    build = parse_go_text("FAIL\texample.com/p/b [build failed]\nFAIL\n")  # no test ran: a build failure, not a stop
    assert build.stopped == ""


def test_a_binary_killed_without_a_panic_is_said_to_have_stopped_too():
    killed = parse_go_text("=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\nsignal: killed\nFAIL\tex.com/k\t0.1s\n")
    assert killed.stopped.startswith("something stopped the test binary of ex.com/k")
