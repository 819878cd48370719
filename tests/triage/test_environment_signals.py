"""Environment signals in the runtimes' own spellings (oserrors.py): ephemeral ports exhausted, a gRPC transport gone,
a database still starting, a SIGBUS, a download's checksum mismatch; each with a control the run's own evidence
contradicts (healthy.py), which must not become an environment verdict."""

from __future__ import annotations

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

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
