"""Every signal has a voice (voice.py), read from structure: which stream, field or frame a text came from. The same
environment words decide `infra_flake` only in the environment's own voice (the runner, the OS, a service), at or
before the failing step; in a unit's voice, an echo, a fixture or after the failure they are facts for a person."""

from __future__ import annotations

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.decider import FACTS_ONLY, classify
from graphlemon.triage.run_context import load_run
from graphlemon.triage.voice import line_speaker, voiced_log, when_at

from .runbuilder import RUN_ID, build_project

UNITS = frozenset({"orders", "billing"})
SDD = "# Shop\n\n## orders\n\n### POST /orders\n\nAnswers 201 with `{order_id}`.\n"
DISK = "OSError: [Errno 28] No space left on device: '/var/lib/orders/tmp'"


def _project(tmp_path, *, log: str = "", got: dict | None = None, description: str = "", trace=()):
    failure = {"case": "place-order", "involves": ["orders"], "description": description,
               "request": {"method": "POST", "path": "/orders"}, "expected": {"status": 201},
               "got": got or {"status": 500, "body": "Internal Server Error"}}  # fmt: skip
    return build_project(tmp_path / "p", units=[{"unit_id": "orders", "code": ["orders"]}],
                         files={"orders/app.py": "def create():\n    return 201\n"}, sdd=SDD, failure=failure,
                         trace=list(trace), log=log)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "voice", "speaker"),
    [
        ("2026-12-03T10:00:04Z [orders] listening on 8080", "unit", "orders"),
        ("2026-12-03T10:00:04Z [runner] starting orders", "runner", "runner"),
        ("2026-12-03T10:00:04.120+00:00 integrator: running the integration cases", "runner", "integrator"),
        ("[kernel] Out of memory: Killed process 4121 (node)", "os", "kernel"),
        ("2026-12-03T10:00:04Z [postgres] FATAL: the database system is starting up", "service", "postgres"),
        ("redis  | Ready to accept connections", "service", "redis"),
        ("orders | INFO: Uvicorn running", "unit", "orders"),
        ("2026-12-03T10:00:04Z integrator: orders-1  | Error: listen EADDRINUSE", "unit", "orders"),  # relayed
        ("2026-12-03T10:00:04Z [runner] [orders] exited", "unit", "orders"),
        ("2026-12-03T10:00:04Z [runner] postgres-1 | ready", "runner", "runner"),  # relaying no unit's output
        ("2026/06/06 18:18:40 PUT /x: write /tmp/y: no space left on device", "unknown", None),
        ("dial: connection refused", "unknown", None),  # a bare word before a colon is a message's own word
        ("INFO:     Started server process [4121]", "unknown", None),
    ],
)
def test_a_log_lines_voice_is_its_tag(line, voice, speaker):
    assert line_speaker(line, UNITS) == (voice, speaker)


def test_the_integrators_command_output_is_the_runners_and_a_units_traceback_in_it_is_the_units(tmp_path):
    log = (
        "2026-12-03T10:00:01Z $ python -m pytest tests/integration\n"
        "2026-12-03T10:00:02Z E   OSError: [Errno 28] No space left on device\n"
        "\n"
        "2026-12-03T10:00:03Z Traceback (most recent call last):\n"
        '2026-12-03T10:00:03Z   File "/srv/shop/orders/app.py", line 2, in create\n'
        "2026-12-03T10:00:03Z KeyError: 'sku'\n"
        "2026-12-03T10:00:04Z exit code 1\n"
    )
    ctx = load_run(_project(tmp_path, log=log), RUN_ID)
    voices = [(v.line.lineno, v.voice, v.speaker) for v in voiced_log(ctx)]
    assert voices[0] == (1, "runner", "integrator") and voices[1] == (2, "runner", "runner")
    assert [v for _n, v, _s in voices[3:6]] == ["unit", "unit", "unit"] and voices[4][2] == "orders"
    assert voices[6] == (7, "runner", "integrator")


def test_the_time_of_a_line_is_before_at_or_after_the_failing_step(tmp_path):
    ctx = load_run(_project(tmp_path), RUN_ID)
    failure = ctx.result.failures[0]
    from graphlemon.triage.voice import log_ts

    assert [when_at(log_ts(f"2026-12-03T10:00:0{s}Z [runner] x"), failure) for s in (4, 5, 6)] == [
        "before",
        "at",
        "after",
    ]
    assert when_at(log_ts("[runner] no time"), failure) == "unknown"


@pytest.mark.parametrize(
    ("where", "decides"),
    [
        ("[runner]", True),
        ("[kernel]", True),
        ("[postgres]", True),
        ("integrator:", True),
        ("[orders]", False),  # the unit's own log: evidence about the unit
        ("", False),  # no tag: nobody can say who wrote it
    ],
)
def test_the_same_environment_words_decide_only_in_the_environments_voice(tmp_path, where, decides, keep):
    keep("infra:disk_full")
    project = _project(tmp_path, log=f"2026-12-03T10:00:04Z {where} {DISK}\n".replace("Z  ", "Z "))
    verdict = classify(load_run(project, RUN_ID))
    if decides:
        assert (verdict.category, verdict.rule) == ("infra_flake", "infra:disk_full") and verdict.confidence == 0.65
    else:
        assert (verdict.category, verdict.confidence) == ("spec_ambiguous", FACTS_ONLY)
        assert any(f.rule == "infra:disk_full" for f in verdict.facts)  # still a fact, with its voice, for a person


@pytest.mark.parametrize(
    "placement",
    [
        {"log": f"2026-12-03T10:00:06Z [runner] {DISK}\n"},  # after the failing step: the run's teardown
        {"got": {"status": 500, "body": {"error": DISK}}},  # the unit's answer
        {"got": {"status": 500, "body": f"customer note: {DISK}"}},  # text the unit echoes
        {"description": f"a full disk is reported as '{DISK}'"},  # the fixture's own words
    ],
    ids=["after", "answer", "echo", "fixture"],
)
def test_environment_words_outside_the_environments_voice_or_after_the_failure_never_decide(tmp_path, placement):
    verdict = classify(load_run(_project(tmp_path, **placement), RUN_ID))
    assert verdict.category == "spec_ambiguous" and verdict.confidence == FACTS_ONLY


def test_the_transport_error_of_a_call_is_the_os_speaking_about_that_address(tmp_path):
    trace = [{"case": "place-order", "step": 0, "unit_id": "orders", "method": "POST", "url": "http://127.0.0.1:8080/orders",
              "status": 500},  # fmt: skip
             {"case": "place-order", "step": 0, "unit_id": None, "method": "GET",  # served by no unit
              "url": "http://127.0.0.1:5432/", "error": "connect ECONNREFUSED 127.0.0.1:5432"}]  # fmt: skip
    verdict = classify(load_run(_project(tmp_path, trace=trace), RUN_ID))
    assert (verdict.category, verdict.rule) == ("infra_flake", "infra:backing_service")
    assert [(s.voice, s.when) for s in verdict.said] == [("os", "at")]


def test_a_verdict_and_its_facts_keep_their_voices_in_the_record(tmp_path):
    project = _project(tmp_path, log=f"2026-12-03T10:00:04Z [orders] {DISK}\n")
    outcome = triage_run(project, RUN_ID)
    assert outcome.record.category == "spec_ambiguous" and not outcome.record.will_auto_apply
    assert any("infra:disk_full suggests infra_flake" in h and "unit/orders before" in h for h in outcome.hints)


def test_words_the_runners_message_quotes_from_the_case_are_the_cases(tmp_path):
    failure = {"case": "full-disk-answer", "involves": ["orders"], "request": {"method": "POST", "path": "/orders"},
               "expected": {"status": 507, "body": {"error": "No space left on device"}}, "got": {"status": 201},
               "message": "AssertionError: expected 507 {'error': 'No space left on device'}, got 201"}  # fmt: skip
    project = build_project(tmp_path / "q", units=[{"unit_id": "orders", "code": ["orders"]}],
                            files={"orders/app.py": "x = 1\n"}, sdd=SDD, failure=failure)  # fmt: skip
    verdict = classify(load_run(project, RUN_ID))
    assert verdict.category == "spec_ambiguous" and not any(f.rule.startswith("infra") for f in verdict.facts)
