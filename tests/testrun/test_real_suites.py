"""The real-suite corpus: pinned packages' own test suites, green and with a planted bug, counted exactly.

The packages (tests/testrun/corpus/corpus.json) are installed once by `make fixtures` into
tests/testrun/corpus/.cache. Each suite runs in a temp copy (node_modules linked); the planted bug
is a one-line replacement in the package's code. The expected numbers are what the project's own
runner prints (mocha's `N passing / N failing`, tape's `# tests / # pass / # fail`, unittest's `Ran N
tests`, pytest's summary), with our documented counting of subtests (a test with failing subtests is
one failed test; the failing subtests are listed with their parameters and counted apart).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.hint_context import without_source

pytestmark = pytest.mark.system

CACHE = Path(__file__).resolve().parent / "corpus" / ".cache"
MORE_ITERTOOLS_CLASSES = ["SplitAtTests", "LastTests", "WindowedTests"]


@dataclass(frozen=True)
class Suite:
    id: str
    package: str
    green: tuple[int, int, int]  # passed, failed, skipped
    bug: tuple[int, int, int]
    bug_file: str
    bug_from: str
    bug_to: str
    framework: str
    targets: list[str] = field(default_factory=list)
    command: str | None = None
    failing: set[str] = field(default_factory=set)  # names of the failing tests with the bug (when few)
    subtests: tuple[int, int] | None = None  # with the bug: (passed, failed) subtests
    framework_arg: str | None = None  # --framework (a monorepo package declares no runner of its own)
    more_bugs: tuple[tuple[str, str, str], ...] = ()  # further (file, from, to) replacements of the planted bug
    venv: bool = False  # the project has its own .venv (made without pip, so without pytest)
    timeout: float = 300.0  # of the run with the planted bug (a green run always has 300 s)
    partial: bool = False  # with the bug the run is stopped by the timeout: `bug` is what its output proves


SUITES = [
    # mocha 8 behind `npm test` = `npm run eslint && nyc npm run test-spec` (`mocha spec -R spec`)
    Suite("mocha-nyc-npm-chain", "json-schema-traverse-1.0.0", (10, 0, 0), (7, 3, 0), "index.js",
          "jsonPtr + '/' + key + '/' + i, rootSchema", "jsonPtr + '/' + key + '/' + (i+1), rootSchema", "mocha"),
    # tape through `npm run tests-only` = `nyc tape 'test/**/*.js'` (TAP 13)
    Suite("tape-tap13", "minimist-1.2.8", (153, 0, 0), (151, 2, 0), "index.js",
          "if ((/^0x[0-9a-f]+$/i).test(x)) { return true; }", "if ((/^0x[0-9a-f]+$/i).test(x)) { return false; }",
          "npm-test", command="npm run tests-only"),
    # unittest subTest under pytest 9
    Suite("pytest-subtests", "more-itertools-10.8.0", (15, 0, 0), (13, 2, 0), "more_itertools/more.py",
          "                yield [item]\n            if maxsplit == 1:",
          "                yield [item]\n            if maxsplit == 2:", "pytest",
          targets=[f"tests/test_more.py::{c}" for c in MORE_ITERTOOLS_CLASSES],
          failing={"tests/test_more.py::SplitAtTests::test_combination", "tests/test_more.py::SplitAtTests::test_maxsplit"},
          subtests=(39, 3)),  # `pytest -q` prints "4 failed, 14 passed, 39 subtests passed" (3 SUBFAILED + 1)
    # the same tests under `python -m unittest`
    Suite("unittest", "more-itertools-10.8.0", (15, 0, 0), (13, 2, 0), "more_itertools/more.py",
          "                yield [item]\n            if maxsplit == 1:",
          "                yield [item]\n            if maxsplit == 2:", "unittest",
          command=f"{sys.executable} -m unittest " + " ".join(f"tests.test_more.{c}" for c in MORE_ITERTOOLS_CLASSES),
          failing={"tests.test_more.SplitAtTests.test_combination", "tests.test_more.SplitAtTests.test_maxsplit"},
          subtests=(0, 3)),
    # pytest with assertions in a helper module pytest does not rewrite (test/common.py: assert_equal)
    Suite("pytest-helper-asserts", "tabulate-0.10.0", (10, 0, 1), (3, 7, 1), "tabulate/__init__.py",
          "MIN_PADDING = 2", "MIN_PADDING = 3", "pytest", targets=["test/test_output.py", "test_plain"]),
    # node:test under c8 through `npm run test:unit` = `c8 --100 node --test` (TAP from node's test runner)
    Suite("node-test-c8", "fastify-plugin-5.0.1", (43, 0, 0), (35, 8, 0), "lib/toCamelCase.js",
          "return g1.toUpperCase()", "return g1.toLowerCase()", "npm-test", command="npm run test:unit"),
    # jest 27 from the package's own config (package.json "jest": coverage on, node environment)
    Suite("jest", "jest-when-3.5.2", (85, 0, 0), (83, 2, 0), "src/when.js",
          "return a.id - b.id", "return b.id - a.id", "jest",
          failing={"When > mock implementation > mockReturnValueOnce: should return specified value only once",
                   "When > mock implementation > `mockReset` on unused when calls"}),
    # vitest 1.0 (its JSON report) on a monorepo package: no runner in its package.json, so --framework vitest
    Suite("vitest", "tanstack-form-core-0.10.0", (56, 0, 0), (54, 2, 0), "src/utils.ts",
          "...parent.slice(key + 1),", "...parent.slice(key),", "vitest", framework_arg="vitest",
          failing={"field api > should swap a value from an array value correctly",
                   "form api > should swap an array field's value"}),
    # the same through the package's script `npm run test:lib` = `vitest run --coverage` (vitest's text)
    Suite("vitest-npm-coverage", "tanstack-form-core-0.10.0", (56, 0, 0), (54, 2, 0), "src/utils.ts",
          "...parent.slice(key + 1),", "...parent.slice(key),", "npm-test", command="npm run test:lib",
          failing={"field api > should swap a value from an array value correctly",
                   "form api > should swap an array field's value"}),
    # pytest on values whose reprs are objects: defaultdicts, plain objects (`<… object at 0x…>`), a dataclass
    Suite("py-reprs", "py-reprs-1.0", (6, 0, 0), (1, 5, 0), "inventory/__init__.py",
          "groups[kind].append(name)", "groups[kind].insert(0, name)", "pytest",
          more_bugs=(("inventory/__init__.py", "counts[word.lower()] += 1", "counts[word] += 1"),
                     ("inventory/__init__.py", "if item.name == name:", "if item.name != name:"),
                     ("inventory/__init__.py", "line.qty + delivered)", "line.qty + delivered - 1)"))),
    # pytest on numbers written as strings (and inside text), off by one
    Suite("py-numeric", "py-numeric-1.0", (5, 0, 0), (1, 4, 0), "bounds/__init__.py",
          "return -(1 << (bits - 1))\n", "return -(1 << (bits - 1)) - 1\n", "pytest"),
    # pytest with --doctest-modules (pytest.ini addopts): doctest examples fail beside plain tests
    Suite("py-doctest", "py-doctest-1.0", (5, 0, 0), (1, 4, 0), "textkit/__init__.py",
          'return "-".join(w.lower() for w in words)', 'return "-".join(words)', "pytest",
          more_bugs=(("textkit/__init__.py", "return len(text.split())", 'return len(text.split(" "))'),)),
    # a unittest-only project: its own .venv has no pytest, so detection must pick unittest with that interpreter
    Suite("unittest-venv", "more-itertools-10.8.0", (15, 0, 0), (13, 2, 0), "more_itertools/more.py",
          "                yield [item]\n            if maxsplit == 1:",
          "                yield [item]\n            if maxsplit == 2:", "unittest", venv=True,
          targets=[f"tests/test_more.py::{c}" for c in MORE_ITERTOOLS_CLASSES],
          failing={"tests.test_more.SplitAtTests.test_combination", "tests.test_more.SplitAtTests.test_maxsplit"},
          subtests=(0, 3)),
    # mocha's TDD interface and a --require setup, both passed by the project's npm script (then a lint step);
    # the planted bug hands a Buffer where the lexer expects a string
    Suite("mocha-tdd-script", "js-mocha-tdd-1.0", (6, 0, 0), (2, 4, 0), "lib/query.js",
          "const source = String(text);", "const source = Buffer.from(String(text));", "mocha"),
    # a long vitest suite whose queue test hangs with the bug: stopped by the timeout, counted from what finished
    Suite("vitest-timeout", "vitest-timeout-1.0", (483, 0, 0), (480, 1, 0), "src/queue.js",
          "if (jobs.length === 0) return resolve(results)", "if (jobs.length === 0) return", "vitest",
          timeout=25.0, partial=True),
    # tape with values holding U+FFFF (a YAML non-character) and an assertion message with '#'
    Suite("tape-chatter", "tape-chatter-1.0", (5, 0, 0), (2, 3, 0), "lib/tally.js",
          "(text.match(/#/g) || [])", "(text.match(/#+/g) || [])", "npm-test",
          more_bugs=(("lib/tally.js", "/[\\uFFFE\\uFFFF]/g", "/[\\uFFFE]/g"),)),
    # go test -json on Debian's go-cmp source (offline: no dependencies); leaf tests counted, parents not.
    # The cmpopts and internal packages (388 tests; all of ./... is 686, with the slow cmp package)
    Suite("go-cmp", "go-cmp-0.5.9", (388, 0, 0), (385, 3, 0), "cmp/cmpopts/equate.go",
          "return math.Abs(x-y) <= math.Max(a.marg, relMarg)", "return math.Abs(x-y) < math.Max(a.marg, relMarg)",
          "go", targets=["./cmp/cmpopts/...", "./cmp/internal/..."], failing={"TestOptions/EquateApprox#12", "TestOptions/EquateApprox+EquateNaNs",
                         "TestOptions/EquateApprox+EquateNaNs+Transform"}),
    # cargo test on Debian's semver crate (unit, integration and doc tests; asserts in #[track_caller] helpers)
    Suite("cargo-semver", "semver-1.0.14", (35, 0, 0), (33, 2, 0), "src/eval.rs",
          "        if ver.minor != minor {\n            return ver.minor > minor;",
          "        if ver.minor != minor {\n            return ver.minor < minor;", "cargo",
          failing={"test_basic", "test_caret"}),
]  # fmt: skip
# offline go and cargo builds, each run's cargo target inside its temp folder
ENV = {"GOFLAGS": "-mod=mod", "GOPROXY": "off", "CARGO_NET_OFFLINE": "true"}


def _copy(suite: Suite, dest: Path) -> Path:
    source = CACHE / suite.package
    if not (source / ".graphlemon-corpus-ok").is_file():
        pytest.fail(f"the real-suite corpus is not installed ({source}): run `make fixtures`")
    target = dest / suite.package
    shutil.copytree(
        source, target, ignore=shutil.ignore_patterns("node_modules", ".nyc_output", ".pytest_cache", ".vitest-cache", "target")
    )
    if (source / "node_modules").is_dir():
        (target / "node_modules").symlink_to(source / "node_modules", target_is_directory=True)
    if suite.venv:  # the project's own interpreter, without pip and so without pytest
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target / ".venv")], check=True)
    return target


def _plant(project: Path, suite: Suite) -> None:
    for file, before, after in ((suite.bug_file, suite.bug_from, suite.bug_to), *suite.more_bugs):
        path = project / file
        text = path.read_text(encoding="utf-8")
        assert text.count(before) == 1, f"the planted bug no longer applies to {file}"
        path.write_text(text.replace(before, after), encoding="utf-8")


def _run(project: Path, suite: Suite, timeout: float = 300.0):
    env = {**ENV, "CARGO_TARGET_DIR": str(project.parent / "cargo-target")}
    return run_tests(
        project, suite.targets, framework=suite.framework_arg, command=suite.command, timeout=timeout, env=env
    )


def _counts(result) -> tuple[int, int, int]:
    s = result.summary
    assert s.total == s.passed + s.failed + s.skipped
    return s.passed, s.failed, s.skipped


@pytest.mark.parametrize("suite", SUITES, ids=[s.id for s in SUITES])
def test_real_suite_counts_green_and_with_a_planted_bug(suite: Suite, tmp_path: Path):
    project = _copy(suite, tmp_path)
    green = _run(project, suite)
    assert green.framework == suite.framework
    assert _counts(green) == suite.green, green.output_tail
    assert green.ok and not green.unparsed and not green.crashed and green.failures == []

    _plant(project, suite)
    broken = _run(project, suite, suite.timeout)
    assert _counts(broken) == suite.bug, broken.output_tail
    assert not broken.ok and not broken.crashed and not broken.unparsed
    assert broken.counts_source in ("report", "text")
    failing = {f.name for f in broken.failures}
    assert len({(f.file, f.name) for f in broken.failures}) == suite.bug[1]  # same-named tests in two files
    if suite.failing:
        assert failing == suite.failing
    if suite.subtests is not None:
        assert broken.subtests is not None
        assert (broken.subtests.passed, broken.subtests.failed) == suite.subtests
        assert all(f.subtest for f in broken.failures if f.name.endswith("test_maxsplit"))
    assert broken.complete is not suite.partial and broken.timed_out is suite.partial
    if suite.partial:  # stopped by the timeout: counted from the files that finished, and it says it is partial
        assert any("stopped before it finished" in w for w in broken.warnings)
        assert json.loads(broken.contract_json())["complete"] is False
    for failure in broken.failures:
        if suite.partial and failure.name.endswith(": run"):
            continue  # the timeout's own failure: the run, not a place in the project
        assert failure.file and failure.line, failure  # located in the project, with a line
        assert not failure.file.startswith("/"), failure.file
        assert failure.hint and "ImportError" not in failure.hint
        if failure.expected is not None:
            assert failure.expected != failure.got or failure.difference_at is None


def test_helper_asserts_get_their_values_from_the_failing_frame(tmp_path: Path):
    """tabulate's `assert_equal(expected, result)` lives in test/common.py, which pytest does not rewrite:
    expected/got come from that frame's variables (by their names), and the hint names the real difference."""
    suite = next(s for s in SUITES if s.id == "pytest-helper-asserts")
    project = _copy(suite, tmp_path)
    _plant(project, suite)
    result = _run(project, suite)
    plain = next(f for f in result.failures if f.name == "test/test_output.py::test_plain")
    assert plain.expected is not None and plain.got is not None
    assert plain.expected.startswith("'strings      numbers") and plain.got.startswith("'strings        numbers")
    assert "whitespace" in plain.hint
    assert without_source(plain.detail).count("assert_equal") == 0  # the quoted helper source is not evidence


def test_targeted_and_last_failed_mocha_runs_keep_the_scripts_options(tmp_path: Path):
    """`"test": "mocha -u tdd --require ./test/setup.js test && node scripts/lint.js"`: a run of one file, and
    --last-failed, still use the TDD interface and the setup file (not `mocha test/query.js` alone)."""
    suite = next(s for s in SUITES if s.id == "mocha-tdd-script")
    project = _copy(suite, tmp_path)
    _plant(project, suite)
    whole = _run(project, suite)
    assert _counts(whole) == suite.bug
    one_file = run_tests(project, ["test/query.js"], timeout=suite.timeout)
    assert "-u tdd --require ./test/setup.js test/query.js" in one_file.command
    assert _counts(one_file) == (0, 4, 0) and not one_file.crashed
    # the TypeError is quoted inside an `assert.throws` failure's message: the test's words, not the runtime's voice,
    # so the hint states it as a fact (docs/testrun.md, hints3)
    assert all("this._input" in f.hint for f in one_file.failures)
    _plant_back(project, suite)
    rerun = run_tests(project, last_failed=True, timeout=suite.timeout)
    assert "-u tdd" in rerun.command and "--grep" in rerun.command
    assert _counts(rerun) == (4, 0, 0) and rerun.ok


def _plant_back(project: Path, suite: Suite) -> None:
    for file, before, after in ((suite.bug_file, suite.bug_from, suite.bug_to), *suite.more_bugs):
        path = project / file
        path.write_text(path.read_text(encoding="utf-8").replace(after, before), encoding="utf-8")
