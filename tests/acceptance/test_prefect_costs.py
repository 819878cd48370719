"""Unit subflows run without a heartbeat of their own (settings derived once), and stage artifacts are sent in the
background (flows/unit_loop.py, tasks/_redacted_artifacts.py)."""

from __future__ import annotations

import pytest
from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings
from prefect_stack import artifacts_keyed

from graphlemon.flows.unit_loop import UnitRuns


def test_heartbeat_is_off_inside_and_untouched_outside():
    with temporary_settings({"flows.heartbeat_frequency": 30}):
        with UnitRuns().without_heartbeat():
            assert get_current_settings().flows.heartbeat_frequency is None
        assert get_current_settings().flows.heartbeat_frequency == 30


def test_derived_once_per_settings_and_again_when_the_settings_change():
    runner = UnitRuns()
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:1/api"}):
        with runner.without_heartbeat() as first:
            pass
        with runner.without_heartbeat() as second:
            assert second.settings is first.settings  # no second copy of the settings model
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:2/api"}):
        with runner.without_heartbeat() as third:
            assert third.settings.api.url == "http://127.0.0.1:2/api"
            assert third.settings.flows.heartbeat_frequency is None


@pytest.mark.system
def test_stage_artifacts_are_sent_in_the_background_linked_to_their_task_run_and_all_there_at_the_end(
    prefect_harness,
):
    from prefect import flow, task
    from prefect.context import get_run_context

    from graphlemon.tasks._redacted_artifacts import create_markdown_artifact, sent_in_background

    @task
    def stage(n: int) -> str:
        assert create_markdown_artifact(markdown=f"stage {n}", key=f"bg-stage-{n}") is None  # queued, not sent
        return str(get_run_context().task_run.id)

    @flow
    def loop() -> dict[str, str]:
        with sent_in_background():
            runs = {f"bg-stage-{n}": stage(n) for n in range(6)}
        return runs  # every artifact was sent before the block ended

    runs = loop()
    found = {a.key: a for a in artifacts_keyed(prefix="bg-stage-")}
    assert set(found) == set(runs)
    assert all(str(found[key].task_run_id) == run_id for key, run_id in runs.items())


@pytest.mark.system
def test_an_artifact_that_cannot_be_sent_is_logged_and_never_fails_the_stage(prefect_harness, caplog):
    from prefect import flow, task

    from graphlemon.tasks._redacted_artifacts import create_markdown_artifact, sent_in_background

    @task
    def stage() -> str:
        create_markdown_artifact(markdown="x", key="Not A Valid Key!")  # Prefect refuses it (lower-case, dashes)
        return "stage done"

    @flow
    def loop() -> str:
        with sent_in_background():
            return stage()

    assert loop() == "stage done"
    assert "artifact Not A Valid Key! not sent" in caplog.text


@pytest.mark.system
def test_outside_the_loop_an_artifact_is_sent_at_once(prefect_harness):
    from prefect import flow, task

    from graphlemon.tasks._redacted_artifacts import create_markdown_artifact

    @task
    def alone():
        return create_markdown_artifact(markdown="now", key="bg-at-once")

    @flow
    def f():
        return alone()

    assert f() is not None  # the artifact's id: it was sent before the task returned
    assert artifacts_keyed(prefix="bg-at-once")

