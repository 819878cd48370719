"""Environment signals in the runtimes' own spellings (oserrors.py): ephemeral ports exhausted, a gRPC transport gone,
a database still starting, a SIGBUS, a download's checksum mismatch; each with a control the run's own evidence
contradicts (healthy.py), which must not become an environment verdict."""

from __future__ import annotations

import errno
import json
import os

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.oserrors import environment_errnos, signal_death
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run
from graphlemon.triage.signals import match_infra, stack_frames

from .runbuilder import RUN_ID, build_project

UNIT = "ledger"
CODE = "import zlib\n\n\ndef load(blob, crc):\n    if zlib.crc32(blob) != crc:\n        raise ValueError('checksum mismatch in block 3')\n    return blob\n"
OWN_STACK = 'Traceback (most recent call last):\n  File "/srv/app/ledger/ledger.py", line 6, in load\n'


def _suite(tmp_path, message: str, *, stack: str = "", log: str = "", trace: list[dict] = (), name: str = "p"):
    """A unit's test suite that failed with `message`; the run log shows `log` at the failure's time."""
    failure = {"case": "ledger-suite", "involves": [UNIT], "message": message, "stack": stack,
               "expected": {}, "got": {}}  # fmt: skip
    sdd = f"# Ledger\n\n## {UNIT}\n\n`load(blob, crc)` returns the blob when its CRC-32 equals `crc`.\n"
    lines = "".join(f"2026-12-03T10:00:05Z [integrator] {x}\n" for x in log.splitlines())
    return build_project(tmp_path / name, units=[{"unit_id": UNIT, "code": ["ledger"]}],
                         files={"ledger/ledger.py": CODE}, sdd=sdd, failure=failure, trace=list(trace), log=lines)  # fmt: skip


def _rule(project) -> str:
    return classify(load_run(project, RUN_ID)).rule


def _confident_flake(project) -> bool:
    r = triage_run(project, RUN_ID).record
    return r.category == "infra_flake" and r.confidence >= 0.8


SPELLINGS = {
    "address_unavailable": (
        "Error: connect EADDRNOTAVAIL 127.0.0.1:8980 - Local (0.0.0.0:0)",
        "OSError: [Errno 99] Cannot assign requested address",
        "dial tcp 127.0.0.1:8980: connect: cannot assign requested address",
    ),
    "rpc_unavailable": (
        'grpc.RpcError: <_InactiveRpcError of RPC that terminated with: status = StatusCode.UNAVAILABLE details = "Socket closed">',
        "rpc error: code = Unavailable desc = error reading from server: EOF",
        "io.grpc.StatusRuntimeException: UNAVAILABLE: io exception",
        "Error: 14 UNAVAILABLE: Connection dropped",
    ),
    "database_starting": (
        "psycopg.OperationalError: connection failed: FATAL:  the database system is starting up",
        "PG::ConnectionBad: FATAL:  the database system is in recovery mode",
        "ERROR 1053 (08S01): Server shutdown in progress",
        "redis.exceptions.BusyLoadingError: LOADING Redis is loading the dataset in memory",
    ),
    "bus_error": (
        "collect2: fatal error: ld terminated with signal 7 [Bus error]",
        "process didn't exit successfully (signal: 7, SIGBUS: access-related hardware error)",
        "Bus error (core dumped)",
    ),
    "checksum_mismatch": (
        "Bundler::SecurityError: Bundler found mismatched checksums. This is a potential security risk.",
        "verifying example.com/geo@v1.2.0: checksum mismatch",
        "npm ERR! code EINTEGRITY",
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
        "error: failed to verify the checksum of `serde v1.0.200`",
    ),
}


@pytest.mark.parametrize(
    ("kind", "line"), [(k, line) for k, lines in SPELLINGS.items() for line in lines], ids=lambda x: x[:30]
)
def test_each_runtimes_spelling_is_a_confident_environment_failure(tmp_path, kind, line):
    project = _suite(tmp_path, line, log=line)
    assert _rule(project) == f"infra:{kind}"
    assert _confident_flake(project)


def test_control_a_units_own_checksum_error_on_its_own_data_is_not_the_environment(tmp_path):
    message = "ValueError: checksum mismatch in block 3"
    project = _suite(tmp_path, message, stack=OWN_STACK + message, log=message)
    assert not _rule(project).startswith("infra:")
    project = _suite(tmp_path, message, stack="pip install -r requirements.txt\n" + message, log=message, name="q")
    assert _rule(project) == "infra:checksum_mismatch"  # the same words from an install step


def test_control_a_bus_error_inside_the_units_own_code_is_not_the_environment(tmp_path):
    message = "Fatal Python error: Bus error"
    project = _suite(tmp_path, message, stack=OWN_STACK + message, log=message)
    assert not _rule(project).startswith("infra:")


@pytest.mark.parametrize(
    "line",
    [
        "Error: listen EADDRNOTAVAIL: address not available 10.9.9.9:8080",
        "listen tcp 10.9.9.9:8080: bind: cannot assign requested address",
    ],
)
def test_control_a_server_that_cannot_bind_its_configured_address_is_not_port_exhaustion(tmp_path, line):
    project = _suite(tmp_path, line, log=line)
    assert not _rule(project).startswith("infra:")


def test_control_an_unavailable_status_while_the_steps_calls_were_answered_is_not_the_environment(tmp_path):
    line = "rpc error: code = Unavailable desc = ledger is read-only"
    answered = {"ts": "2026-12-03T10:00:04Z", "case": "ledger-suite", "step": 0, "unit_id": UNIT, "method": "POST",
                "url": "http://127.0.0.1:7600/ledger.Ledger/Load", "status": 200, "response_body": {"ok": False}}  # fmt: skip
    assert not _rule(_suite(tmp_path, line, log=line, trace=[answered])).startswith("infra:")
    cut = {**answered, "status": None, "response_body": None, "error": "stream reset"}
    assert _rule(_suite(tmp_path, line, log=line, trace=[cut], name="q")) == "infra:rpc_unavailable"


def test_control_a_database_that_was_starting_and_then_became_ready_is_start_up_noise(tmp_path):
    log = (
        "waiting for postgres: FATAL:  the database system is starting up (attempt 2/30)\n"
        "postgres ready to accept connections\n"
    )
    project = _suite(tmp_path, "AssertionError: expected 3 rows, got 2", log=log)
    assert _rule(project) != "infra:database_starting"


# -- environment failures read by their kind, not by a list of the ones seen before --------------------------------


def _log(tmp_path, *lines: str, message: str = "AssertionError: expected 201, got 500", name: str = "p", **kw):
    """The suite failed with `message`; `lines` are process.log lines, each with its own timestamp and source."""
    failure = {"case": "ledger-suite", "involves": [UNIT], "message": message, "expected": {}, "got": {}, **kw}
    sdd = f"# Ledger\n\n## {UNIT}\n\n`load(blob, crc)` returns the blob when its CRC-32 equals `crc`.\n"
    return build_project(tmp_path / name, units=[{"unit_id": UNIT, "code": ["ledger"]}], files={"ledger/ledger.py": CODE},
                         sdd=sdd, failure=failure, log="".join(x + "\n" for x in lines))  # fmt: skip


@pytest.mark.parametrize(
    "symbol", sorted(s for s, k in environment_errnos().items() if k == "os_error" and hasattr(errno, s))
)
def test_every_environment_errno_of_the_platform_is_read_by_its_symbol_number_and_message(symbol):
    code = getattr(errno, symbol)
    assert match_infra(f"write failed: {symbol}") == ("os_error", True)
    assert match_infra(f"OSError: [Errno {code}] {os.strerror(code)}: '/data/x'") == ("os_error", True)


@pytest.mark.parametrize("symbol", ["ENOENT", "EINVAL", "EEXIST", "EACCES", "EPERM", "EISDIR", "EBADF", "EAGAIN"])
def test_an_errno_the_calling_program_causes_is_no_environment_signal(symbol):
    code = getattr(errno, symbol)
    assert match_infra(f"OSError: [Errno {code}] {os.strerror(code)}: '/data/x' ({symbol})") is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("worker exited with code 143", "SIGTERM"),
        ("signal: terminated", "SIGTERM"),
        ("Command '['render']' died with <Signals.SIGXCPU: 24>.", "SIGXCPU"),
        ("subprocess returned non-zero exit status -25", "SIGXFSZ"),
        ("render-worker: CPU time limit exceeded (core dumped)", "SIGXCPU"),
        ("supervisor: api (pid 4121) terminated by signal SIGHUP", "SIGHUP"),
        ("container exited (137)", "SIGKILL"),
        ("Segmentation fault (core dumped)", "SIGSEGV"),
    ],
)
def test_a_signal_death_is_read_in_each_spelling(text, name):
    assert signal_death(text).name == name


@pytest.mark.parametrize(
    "text", ["exit code 1", "received SIGTERM, draining", "exited with code 0", "HTTP status code 200"]
)
def test_no_signal_death_without_one(text):
    assert signal_death(text) is None


def test_a_signal_sent_from_outside_is_the_environment_a_fault_of_the_process_is_not():
    assert match_infra("tiles-api (pid 9) terminated by signal SIGTERM") == ("signaled", True)
    assert match_infra("render-worker: File size limit exceeded (core dumped)") == ("signaled", True)
    assert match_infra("render-worker: Segmentation fault (core dumped)") is None
    assert match_infra("render-worker: Floating point exception (core dumped)") is None


def test_an_errno_no_scenario_named_is_a_confident_environment_failure(tmp_path):
    project = _log(tmp_path, "2026-12-03T10:00:04Z [runner] nfs: cache-2: Link has been severed (ENOLINK)")
    assert _rule(project) == "infra:os_error"
    assert _confident_flake(project)


def test_a_process_stopped_before_the_failure_is_the_environment_one_stopped_after_is_the_teardown(tmp_path):
    before = "2026-12-03T10:00:04Z [runner] supervisor: ledger (pid 41) terminated by signal SIGTERM"
    assert _rule(_log(tmp_path, before)) == "infra:signaled"
    after = "2026-12-03T10:00:07Z [runner] ledger exited with code 143"
    assert not _rule(_log(tmp_path, after, name="q")).startswith("infra:")


def test_a_dependency_not_ready_counts_where_the_dependency_speaks_not_in_a_units_words(tmp_path):
    line = "2026-12-03T10:00:04Z [kafka] Leader election in progress for orders-0"
    assert _rule(_log(tmp_path, line)) == "infra:dependency_unavailable"
    own = f"2026-12-03T10:00:04Z [{UNIT}] batch 7 is still recovering; not ready for reads"
    assert not _rule(_log(tmp_path, own, name="q")).startswith("infra:")
    said = "AssertionError: expected the order to be not ready yet, got 'collected'"
    assert not _rule(_log(tmp_path, message=said, name="r")).startswith("infra:")


def test_environment_words_the_case_expects_to_see_are_the_answer_under_test(tmp_path):
    message = "AssertionError: expected reason 'certificate has expired', got 'valid'"
    expected = {"value": {"reason": "certificate has expired"}}
    assert not _rule(_log(tmp_path, message=message, expected=expected, got={"value": {"reason": "valid"}})).startswith(
        "infra:"
    )
    assert _rule(_log(tmp_path, message=message, name="q")) == "infra:certificate_expired"  # no expectation says so


def _crashed(project, crashed: bool = True):
    path = project.root / ".graphlemon" / "integration" / "runs" / RUN_ID / "result.json"
    result = json.loads(path.read_text())
    path.write_text(json.dumps({**result, "crashed": crashed}, indent=2))
    return project


def test_a_crashed_runner_is_the_environment_unless_the_step_was_answered_and_compared(tmp_path):
    project = _crashed(_log(tmp_path, message="", got={"error": "worker gw1 ended before the step completed"}))
    finding = classify(load_run(project, RUN_ID))
    assert finding.rule == "infra:runner_crashed"
    assert any('"crashed": true' in e for e in finding.evidence)
    assert triage_run(project, RUN_ID).record.evidence_verified
    compared = _crashed(_log(tmp_path, message="expected 3, got 2", expected={"value": 3}, got={"value": 2}, name="q"))
    assert not _rule(compared).startswith("infra:")


def test_stack_frames_of_ruby_java_kotlin_go_and_rust_are_read():
    stack = (
        "app/models/ledger.rb:42:in `post'\n\tat ledger.Book.post(Book.java:17)\n\tat ledger.Sum.of(Sum.kt:9)\n"
        "\t/srv/ledger/book.go:31 +0x1d\n   at src/book.rs:12:5"
    )
    assert stack_frames(stack) == [("app/models/ledger.rb", 42), ("Book.java", 17), ("Sum.kt", 9),
                                   ("/srv/ledger/book.go", 31), ("src/book.rs", 12)]  # fmt: skip


def test_an_environment_error_beside_a_step_whose_calls_were_answered_is_set_aside(tmp_path):
    line = "2026-12-03T10:00:04Z [runner] OSError: [Errno 5] Input/output error: '/var/log/ledger/audit.log'"
    answered = {"ts": "2026-12-03T10:00:05Z", "case": "ledger-suite", "step": 0, "unit_id": UNIT, "method": "GET",
                "url": "http://127.0.0.1:7600/ledger/3", "status": 200, "response_body": {"rows": 2}}  # fmt: skip
    project = build_project(tmp_path / "p", units=[{"unit_id": UNIT, "code": ["ledger"]}], files={"ledger/ledger.py": CODE},
                            sdd=f"# Ledger\n\n## {UNIT}\n\nGET /ledger/{{id}} answers 200.\n", trace=[answered],
                            failure={"case": "ledger-suite", "involves": [UNIT], "expected": {"status": 200, "body": {"rows": 3}},
                                     "got": {"status": 200, "body": {"rows": 2}}}, log=line + "\n")  # fmt: skip
    assert not _rule(project).startswith("infra:")
    assert any("environment signals set aside" in h for h in classify(load_run(project, RUN_ID)).hints)


@pytest.mark.parametrize(
    "line",
    [
        "npm ERR! 429 Too Many Requests - GET https://registry.example/mjml/-/mjml-4.15.3.tgz",
        "error: failed to download from `https://crates.example/api/v1/crates/serde/1.0.200/download` (HTTP 502)",
        "go: example.com/geo@v1.2.0: reading https://proxy.example/example.com/geo/@v/v1.2.0.zip: 502 Bad Gateway",
        "Could not transfer artifact org.x:y:pom:1.2 from/to central: status code: 503, reason phrase: Service Unavailable",
        "toomanyrequests: You have reached your pull rate limit",
    ],
    ids=lambda x: x[:20],
)
def test_a_registry_that_refused_the_install_is_the_environment_even_long_before_an_unanswered_step(tmp_path, line):
    project = _log(
        tmp_path,
        f"2026-12-03T09:51:00Z [runner] {line}",
        message="",
        got={"error": "connect ECONNREFUSED 127.0.0.1:7600"},
    )
    assert _rule(project) == "infra:download_failed"


def test_a_registry_status_a_unit_of_the_project_answered_is_its_own_answer(tmp_path):
    line = f"2026-12-03T10:00:05Z [runner] {UNIT}: GET /packages/is-odd 503 - package registry unavailable"
    answered = {"ts": "2026-12-03T10:00:05Z", "case": "ledger-suite", "step": 0, "unit_id": UNIT, "method": "GET",
                "url": "http://127.0.0.1:7600/packages/is-odd", "status": 503, "response_body": {"error": "unavailable"}}  # fmt: skip
    project = build_project(tmp_path / "p", units=[{"unit_id": UNIT, "code": ["ledger"]}], files={"ledger/ledger.py": CODE},
                            sdd=f"# Ledger\n\n## {UNIT}\n\nGET /packages/{{name}} answers 200; an unknown package answers 404.\n",
                            trace=[answered], log=line + "\n",
                            failure={"case": "ledger-suite", "involves": [UNIT], "expected": {"status": 404}, "got": {"status": 503}})  # fmt: skip
    assert _rule(project) != "infra:download_failed"


def test_a_crashed_runner_in_a_compact_result_json_is_cited_as_written(tmp_path):
    project = _log(tmp_path, message="", got={"error": "worker gw1 ended before the step completed"})
    path = project.root / ".graphlemon" / "integration" / "runs" / RUN_ID / "result.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "crashed": True}, separators=(",", ":")))
    record = triage_run(project, RUN_ID).record
    assert record.category == "infra_flake" and record.evidence_verified
    assert any('"crashed":true' in e for e in record.evidence)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("./run.sh: line 12:  4121 Killed                  node server.js", "killed"),
        ("fatal error: runtime: out of memory", "out_of_resources"),
        ("RuntimeError: can't start new thread", "out_of_resources"),
        ("lookup db on 127.0.0.11:53: server misbehaving", "dns"),
        ("curl: (6) Could not resolve host: mirror.internal", "dns"),
        (
            "docker: Error response from daemon: OCI runtime create failed: runc did not terminate",
            "dependency_unavailable",
        ),
        ("The node was low on resource: ephemeral-storage.", "killed"),
        ("INTERNALERROR> Traceback (most recent call last):", "runner_crashed"),
    ],
    ids=lambda x: x[:24],
)
def test_more_environment_spellings_of_known_kinds(line, kind):
    assert match_infra(line) == (kind, True)


def test_a_harness_crash_in_the_runners_log_is_the_environment_in_a_units_log_it_is_not(tmp_path):
    runner = "2026-12-03T10:00:05Z [integrator] [gw1] node down: Not properly terminated"
    assert _rule(_log(tmp_path, runner, message="", got={"error": "worker ended"})) == "infra:runner_crashed"
    own = f"2026-12-03T10:00:05Z [{UNIT}] import worker crashed: ValueError in batch 3"
    assert _rule(_log(tmp_path, own, name="q")) != "infra:runner_crashed"


def test_a_huge_text_is_read_at_its_head_and_tail_only():
    filler = "Ab Cd " * 400_000  # 2.4 MB of words
    assert match_infra(filler + "OSError: [Errno 116] Stale file handle") == ("os_error", True)
    assert match_infra("connect EHOSTUNREACH 10.0.0.9:5432\n" + filler) == ("unreachable", True)
    assert match_infra(filler + "No space left on device" + filler) is None  # the middle is not read
