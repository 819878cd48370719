"""Unit subflows run without a heartbeat of their own (settings derived once), and stage artifacts are sent in the
background (flows/stages.py, tasks/_redacted_artifacts.py)."""

from __future__ import annotations

from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings
from prefect_stack import artifacts_keyed

from flows.stages import PrefectRunner


def test_heartbeat_is_off_inside_and_untouched_outside():
    with temporary_settings({"flows.heartbeat_frequency": 30}):
        with PrefectRunner().without_heartbeat():
            assert get_current_settings().flows.heartbeat_frequency is None
        assert get_current_settings().flows.heartbeat_frequency == 30


def test_derived_once_per_settings_and_again_when_the_settings_change():
    runner = PrefectRunner()
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:1/api"}):
        with runner.without_heartbeat() as first:
            pass
        with runner.without_heartbeat() as second:
            assert second.settings is first.settings  # no second copy of the settings model
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:2/api"}):
        with runner.without_heartbeat() as third:
            assert third.settings.api.url == "http://127.0.0.1:2/api"
            assert third.settings.flows.heartbeat_frequency is None


def test_stage_artifacts_are_sent_in_the_background_linked_to_their_task_run_and_all_there_at_the_end(
    prefect_harness,
):
    from prefect import flow, task
    from prefect.context import get_run_context

    from tasks._redacted_artifacts import create_markdown_artifact, sent_in_background

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


def test_an_artifact_that_cannot_be_sent_is_logged_and_never_fails_the_stage(prefect_harness, caplog):
    from prefect import flow, task

    from tasks._redacted_artifacts import create_markdown_artifact, sent_in_background

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


def test_outside_the_loop_an_artifact_is_sent_at_once(prefect_harness):
    from prefect import flow, task

    from tasks._redacted_artifacts import create_markdown_artifact

    @task
    def alone():
        return create_markdown_artifact(markdown="now", key="bg-at-once")

    @flow
    def f():
        return alone()

    assert f() is not None  # the artifact's id: it was sent before the task returned
    assert artifacts_keyed(prefix="bg-at-once")


def test_prefect_clients_share_one_verified_tls_context():
    import ssl

    from prefect.client.orchestration import PrefectClient, SyncPrefectClient

    import tasks  # noqa: F401  (installs the shared context)

    first = PrefectClient("https://prefect.example/api")
    second = SyncPrefectClient("https://prefect.example/api")
    ctx = first._client._transport._pool._ssl_context
    assert ctx is second._client._transport._pool._ssl_context
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname


def test_skip_verify_still_gets_its_own_context_and_leaves_the_shared_one_verified():
    import ssl

    from prefect.client.orchestration import PrefectClient
    from prefect.settings import PREFECT_API_TLS_INSECURE_SKIP_VERIFY

    import tasks  # noqa: F401

    verified = PrefectClient("https://prefect.example/api")._client._transport._pool._ssl_context
    with temporary_settings({PREFECT_API_TLS_INSECURE_SKIP_VERIFY: True}):
        insecure = PrefectClient("https://prefect.example/api")._client._transport._pool._ssl_context
    assert insecure is not verified and insecure.verify_mode == ssl.CERT_NONE
    assert verified.verify_mode == ssl.CERT_REQUIRED and verified.check_hostname


class _LockedThenOk:
    """A local HTTP server: its first `locked` POSTs get 503 (what Prefect's server answers when SQLite was
    locked), later ones 201; `retry_after` adds the header a server in maintenance sends."""

    def __init__(self, locked: int, retry_after: bool = False):
        import http.server
        import threading

        outer = self
        self.posts = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts += 1
                busy = outer.posts <= locked
                body = b'{"exception_message": "Service Unavailable"}' if busy else b'{"id": "r1"}'
                self.send_response(503 if busy else 201)
                if busy and retry_after:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _sleeps(monkeypatch) -> list[float]:
    """Every sleep of the client's retry paths (ours and Prefect's), recorded instead of slept."""
    import time

    import prefect.client.base as base

    import tasks._prefect_locked_retry as quick

    slept: list[float] = []

    async def asleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr(quick, "_sleep", slept.append)
    monkeypatch.setattr(quick, "_asleep", asleep)
    monkeypatch.setattr(base, "time", type("T", (), {"sleep": staticmethod(slept.append), "time": time.time}))
    monkeypatch.setattr(base.anyio, "sleep", asleep)
    return slept


def test_a_503_from_a_locked_sqlite_is_retried_within_milliseconds_not_seconds(monkeypatch):
    """Prefect's clients sleep 2^n s after a 503; a SQLite lock lasts one write. Both clients retry it quickly."""
    import asyncio

    from prefect.client.base import PrefectHttpxAsyncClient, PrefectHttpxSyncClient

    import tasks  # noqa: F401  (installs the quick retry)
    from tasks._prefect_locked_retry import QUICK_S

    slept = _sleeps(monkeypatch)
    server = _LockedThenOk(locked=2)
    try:
        with PrefectHttpxSyncClient(base_url=server.url) as client:
            assert client.post("/task_runs/", json={}).status_code == 201
        assert server.posts == 3 and slept == list(QUICK_S[:2])  # Prefect's own 2 s back-off never ran

        async def post():
            async with PrefectHttpxAsyncClient(base_url=server.url) as client:
                return await client.post("/flow_runs/", json={})

        server.posts, slept[:] = 0, []
        assert asyncio.run(post()).status_code == 201
        assert server.posts == 3 and slept == list(QUICK_S[:2])
    finally:
        server.close()


def test_a_lock_that_outlasts_the_quick_retries_falls_back_to_prefects_back_off(monkeypatch):
    from prefect.client.base import PrefectHttpxSyncClient

    import tasks  # noqa: F401
    from tasks._prefect_locked_retry import QUICK_S

    slept = _sleeps(monkeypatch)
    server = _LockedThenOk(locked=len(QUICK_S) + 1)  # the first try and every quick retry: locked
    try:
        with PrefectHttpxSyncClient(base_url=server.url) as client:
            assert client.post("/task_runs/", json={}).status_code == 201
    finally:
        server.close()
    assert slept[: len(QUICK_S)] == list(QUICK_S) and len(slept) == len(QUICK_S) + 1
    assert slept[-1] > 1.0  # then Prefect's own exponential back-off, as before


def test_a_503_that_says_when_to_come_back_is_left_to_prefect(monkeypatch):
    from prefect.client.base import PrefectHttpxSyncClient

    import tasks  # noqa: F401

    slept = _sleeps(monkeypatch)
    server = _LockedThenOk(locked=1, retry_after=True)
    try:
        with PrefectHttpxSyncClient(base_url=server.url) as client:
            assert client.post("/task_runs/", json={}).status_code == 201
    finally:
        server.close()
    assert server.posts == 2 and len(slept) == 1  # Prefect's own wait on Retry-After, none of ours
