"""The environment kinds the decider keeps (environment_signals.py, oserrors.py), each said in the runner's voice before the
failing step, and the controls that must not become an environment verdict."""

from __future__ import annotations

import pytest

from graphlemon.triage.decider import FACTS_ONLY, classify
from graphlemon.triage.environment_signals import environment_signals, near_miss
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

SDD = "# Shop\n\n## orders\n\n### POST /orders\n\nAnswers 201 with `{order_id}`.\n"
SERVED = {"case": "place-order", "step": 0, "unit_id": "orders", "method": "POST", "url": "http://127.0.0.1:8080/orders",
          "status": 500}  # fmt: skip


def _project(tmp_path, log: str, *, trace=(SERVED,), got: dict | None = None, sdd=SDD, units=("orders",), body=None):
    failure = {"case": "place-order", "involves": ["orders"], "request": {"method": "POST", "path": "/orders", "body": body},
               "expected": {"status": 201}, "got": got or {"status": 500, "body": "Internal Server Error"}}  # fmt: skip
    return build_project(tmp_path / "p", units=[{"unit_id": u, "code": [u]} for u in units],
                         files={f"{u}/app.py": "def create():\n    return 201\n" for u in units}, sdd=sdd, failure=failure,
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
def test_each_kept_kind_in_the_runners_voice_decides_infra_flake(tmp_path, kind, line, keep):
    keep(f"infra:{kind}")  # which kinds are kept is a measurement (decider.MEASURED): here, how a kept one decides
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


def test_an_outside_hosts_throttling_is_the_service_speaking_and_a_loopback_stub_is_the_fixture(tmp_path, keep):
    keep("infra:external_service")
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


# -- what is the project's own: order, quotes, the case's words, the units' addresses (red45's mechanisms) ----------


def _at(*lines: str) -> str:
    return "".join(f"2026-12-03T10:00:05Z {x}\n" for x in lines)


def _signals(tmp_path, log: str, **kw):
    ctx = load_run(_project(tmp_path, log, **kw), RUN_ID)
    return ctx, environment_signals(ctx, ctx.result.failures[0])


def test_a_line_after_the_runners_fail_line_is_after_even_in_the_same_second(tmp_path):
    log = _at("[runner] FAIL place-order step 0: assert 500 == 201",
              "[runner] teardown: saving artifacts: No space left on device")  # fmt: skip
    ctx, signals = _signals(tmp_path, log)
    assert [(s.kind, s.said.when) for s in signals] == [("disk_full", "after")]
    assert classify(ctx).confidence == FACTS_ONLY


def test_a_line_the_same_second_before_the_fail_line_is_at(tmp_path):
    log = _at("[runner] teardown: No space left on device", "[runner] FAIL place-order step 0: assert 500 == 201")
    _ctx, signals = _signals(tmp_path, log)
    assert [(s.kind, s.said.when) for s in signals] == [("disk_full", "at")]


def test_a_line_that_dates_what_it_reports_before_the_failures_day_is_quoted(tmp_path):
    log = _runner("rerun plugin: last failure 2026-12-01 in run r-9: Temporary failure in name resolution")
    ctx, signals = _signals(tmp_path, log)
    assert [(s.kind, s.said.when) for s in signals] == [("dns", "quoted")]
    assert classify(ctx).confidence == FACTS_ONLY


def test_words_the_runner_logs_from_the_request_are_the_cases(tmp_path):
    subject = "Site down: Address already in use after deploy"
    log = _runner(f'case place-order step 0: POST /orders subject="{subject}"')
    _ctx, signals = _signals(tmp_path, log, body={"subject": subject})
    assert signals == []
    _ctx, control = _signals(tmp_path / "b", log)  # the same line when the case sent no such words
    assert [s.kind for s in control] == ["port_in_use"]


SDD_PORTS = SDD + "\n## stock\n\nListens on port 8031. `POST /stock/reserve` answers 200.\n"


@pytest.mark.parametrize("port", [8031, 8013])  # the port the SDD assigns to a unit, and a near-miss of it
def test_a_refused_connection_to_a_units_sdd_port_or_a_near_miss_is_no_backing_service(tmp_path, port):
    log = _runner(f"orders: stock reserve failed: connect ECONNREFUSED 127.0.0.1:{port}")
    ctx = load_run(_project(tmp_path, log, sdd=SDD_PORTS, units=("orders", "stock")), RUN_ID)
    assert environment_signals(ctx, ctx.result.failures[0]) == []


def test_eai_again_for_a_near_miss_of_a_units_host_is_the_units_typo(tmp_path):
    ctx, signals = _signals(tmp_path, _runner("getaddrinfo EAI_AGAIN ordres"))
    assert signals == [] and classify(ctx).confidence == FACTS_ONLY
    _ctx, real = _signals(tmp_path / "b", _runner("getaddrinfo EAI_AGAIN orders"))  # the unit's own name: the resolver
    assert [s.kind for s in real] == ["dns"]


def test_a_clash_on_a_port_a_unit_holds_in_this_run_is_the_projects_own(tmp_path):
    # the trace shows orders serving :8080: a second bind of it is the project fighting itself
    _ctx, signals = _signals(tmp_path, _runner("Error: listen EADDRINUSE: address already in use 0.0.0.0:8080"))
    assert signals == []


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [("8013", "8031", True), ("courriers", "couriers", True), ("orders", "orders", False), ("5432", "6379", False),
     ("ordres", "orders", True), ("abc", "abd", False)],
)  # fmt: skip
def test_a_near_miss_is_one_edit_or_one_swap(a, b, near):
    assert near_miss(a, b) is near
