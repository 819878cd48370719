"""The environment kinds the decider keeps (environment.py, oserrors.py), each said in the runner's voice before the
failing step, and the controls that must not become an environment verdict."""

from __future__ import annotations

import pytest

from graphlemon.triage.decider import FACTS_ONLY, classify
from graphlemon.triage.environment import environment_signals
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

SDD = "# Shop\n\n## orders\n\n### POST /orders\n\nAnswers 201 with `{order_id}`.\n"
SERVED = {"case": "place-order", "step": 0, "unit_id": "orders", "method": "POST", "url": "http://127.0.0.1:8080/orders",
          "status": 500}  # fmt: skip


def _project(tmp_path, log: str, *, trace=(SERVED,), got: dict | None = None):
    failure = {"case": "place-order", "involves": ["orders"], "request": {"method": "POST", "path": "/orders"},
               "expected": {"status": 201}, "got": got or {"status": 500, "body": "Internal Server Error"}}  # fmt: skip
    return build_project(tmp_path / "p", units=[{"unit_id": "orders", "code": ["orders"]}],
                         files={"orders/app.py": "def create():\n    return 201\n"}, sdd=SDD, failure=failure,
                         trace=list(trace), log=log)  # fmt: skip


def _runner(*lines: str) -> str:
    return "".join(f"2026-12-03T10:00:04Z [runner] {x}\n" for x in lines)


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("port_in_use", "orders: Error: listen EADDRINUSE: address already in use 0.0.0.0:9464"),
        ("port_in_use", "OSError: [Errno 98] Address already in use"),
        ("disk_full", "write /var/lib/orders/upload-3378221: no space left on device"),
        ("disk_full", "std::io::ErrorKind::StorageFull while writing the spool"),
        ("dns", "socket.gaierror: [Errno -3] Temporary failure in name resolution"),
        ("dns", "getaddrinfo EAI_AGAIN billing.svc.internal"),
        ("out_of_resources", "OSError: [Errno 24] Too many open files"),
        ("out_of_resources", "java.lang.OutOfMemoryError: Java heap space"),
        ("missing_dependency", "ModuleNotFoundError: No module named 'qrcode'"),
        ("missing_dependency", "error while loading shared libraries: libvips.so.42: cannot open shared object file"),
        ("backing_service", "waiting for postgres at 127.0.0.1:5432: connection refused; giving up"),
    ],
)
def test_each_kept_kind_in_the_runners_voice_decides_infra_flake(tmp_path, kind, line):
    verdict = classify(load_run(_project(tmp_path, _runner(line)), RUN_ID))
    assert (verdict.category, verdict.rule, verdict.affected) == ("infra_flake", f"infra:{kind}", [])
    # a hypothesis: below auto-apply, its action the one re-run that checks it
    assert verdict.confidence < 0.8 and any("process.log:1" in e for e in verdict.evidence)


@pytest.mark.parametrize(
    "line",
    [
        "getaddrinfo ENOTFOUND billing-svc",  # the name does not exist: a statement about the name, not the resolver
        "ModuleNotFoundError: No module named 'orders.pricing'",  # the project's own module: its code
        "connect ECONNREFUSED 127.0.0.1:8080",  # the unit's own port: the unit was not up, not a backing service
        "request finished: 201 Created in 12 ms",
    ],
)
def test_controls_are_no_environment_signal(tmp_path, line):
    ctx = load_run(_project(tmp_path, _runner(line)), RUN_ID)
    assert environment_signals(ctx, ctx.result.failures[0]) == []
    assert classify(ctx).confidence == FACTS_ONLY


def test_a_retried_connection_at_start_up_that_then_succeeded_is_noise(tmp_path):
    log = _runner("waiting for postgres: connect ECONNREFUSED 127.0.0.1:5432 (attempt 2/30)", "postgres is ready")
    ctx = load_run(_project(tmp_path, log), RUN_ID)
    assert [s.kind for s in environment_signals(ctx, ctx.result.failures[0])] == []


def test_an_outside_hosts_throttling_is_the_service_speaking_and_a_loopback_stub_is_the_fixture(tmp_path):
    outside = {"case": "place-order", "step": 0, "unit_id": None, "method": "GET", "status": 503,
               "url": "https://api.tariffs.example/v1/rates", "response_body": "Service Unavailable"}  # fmt: skip
    verdict = classify(load_run(_project(tmp_path, "", trace=(outside, SERVED)), RUN_ID))
    assert (verdict.category, verdict.rule) == ("infra_flake", "infra:external_service")
    assert [(s.voice, s.speaker) for s in verdict.said] == [("service", "api.tariffs.example")]
    stub = {**outside, "url": "http://127.0.0.1:9999/v1/rates"}
    ctx = load_run(_project(tmp_path / "stub", "", trace=(stub, SERVED)), RUN_ID)
    assert [s.kind for s in environment_signals(ctx, ctx.result.failures[0])] == []


def test_the_failing_calls_own_refusal_is_about_the_unit_under_test(tmp_path):
    got = {"error": "connect ECONNREFUSED 127.0.0.1:7777"}  # no unit has announced 7777: still the case's target
    verdict = classify(load_run(_project(tmp_path, "", trace=(), got=got), RUN_ID))
    assert verdict.category == "spec_ambiguous" and verdict.confidence == FACTS_ONLY
