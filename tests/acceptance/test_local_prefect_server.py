"""GraphLemon's local Prefect server (graphlemon/local_server.py, flows/local_server.py): started once, reused, never
another user's or another program's, stopped on request or when idle; SQLite's lock retried on the server side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CALC, make_repo  # at import: later conftest modules take the name `conftest`
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from graphlemon import local_server
from graphlemon.errors import GraphLemonError

GRAPHLEMON = [sys.executable, "-m", "graphlemon"]


def _server(config: Path, *args: str, **env: str) -> dict:
    out = subprocess.run([*GRAPHLEMON, "server", *args, "--json"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GRAPHLEMON_CONFIG_DIR": str(config), **env})  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _wait_stopped(directory: Path, pid: int, within_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        if not local_server.is_server_process(pid):
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"the server {pid} still runs after {within_s} s")


@pytest.mark.system
@pytest.mark.slow
def test_started_once_reused_stopped_when_idle_then_graphlemon_run_starts_it_once_and_reuses_it(tmp_path):
    """One server folder through its life (each server start costs seconds, a first one tens: they are shared):
    `graphlemon server` commands start it once, it stops when idle; `graphlemon run`s start it again (its database
    kept) and reuse it; a server another Prefect started is replaced; `stop` stops it."""
    config = tmp_path / "config"
    try:
        stopped_pid = _started_once_reused_then_stopped_and_idle_only_without_live_leases(config)
        running = _graphlemon_run_starts_the_local_server_once_and_the_next_run_reuses_it(config, tmp_path, stopped_pid)
        _replaced_when_another_prefect_started_it_then_stopped(config, running)
    finally:
        local_server.stop(config / "prefect-server")  # whatever step failed


def _started_once_reused_then_stopped_and_idle_only_without_live_leases(config: Path) -> int:
    env = {**os.environ, "GRAPHLEMON_CONFIG_DIR": str(config), "GRAPHLEMON_PREFECT_SERVER_IDLE_MINUTES": "0.1"}
    both = [subprocess.Popen([*GRAPHLEMON, "server", "start", "--json"], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]  # two commands at once, the server not yet started: one server for both  # fmt: skip
    first, second = (json.loads(p.communicate(timeout=300)[0]) for p in both)
    assert first["pid"] == second["pid"] and first["state"] == second["state"] == "running"  # idle after 6 s
    assert first["url"].startswith("http://127.0.0.1:")
    directory = Path(first["folder"])
    assert directory == config / "prefect-server" and (directory.stat().st_mode & 0o777) == 0o700
    assert _server(config, "start")["pid"] == first["pid"]  # found running: not a second server

    holder = subprocess.Popen(["sleep", "60"])
    try:
        (directory / "leases" / str(holder.pid)).touch()  # a command using the server
        time.sleep(10)
        assert _server(config, "status")["state"] == "running"  # idle minutes passed, but a command holds it
    finally:
        holder.kill()
        holder.wait()
    _wait_stopped(directory, first["pid"], within_s=30)
    assert not (directory / local_server.INFO_FILE).exists()
    assert _server(config, "status")["state"] == "stopped"

    return first["pid"]


def _replaced_when_another_prefect_started_it_then_stopped(config: Path, again: dict) -> None:
    directory = config / "prefect-server"
    record = json.loads((directory / local_server.INFO_FILE).read_text())
    (directory / local_server.INFO_FILE).write_text(json.dumps({**record, "prefect_version": "3.0.0"}))
    upgraded = _server(config, "start")  # a server of another Prefect, used by no command: replaced
    assert upgraded["pid"] != again["pid"] and not local_server.is_server_process(again["pid"])
    assert _server(config, "stop") == {"stopped": True, "pid": upgraded["pid"], "url": upgraded["url"]}
    assert not local_server.is_server_process(upgraded["pid"])
    assert _server(config, "stop")["stopped"] is False


@pytest.mark.system
def test_a_recorded_pid_that_is_not_this_users_server_is_never_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHLEMON_CONFIG_DIR", str(tmp_path))
    directory = local_server.state_dir()
    other = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"])
    try:
        info = local_server.ServerInfo(pid=other.pid, port=1, url="http://127.0.0.1:1/api",
                                       started_at="2026-01-01T00:00:00Z", idle_minutes=30)  # fmt: skip
        (directory / local_server.INFO_FILE).write_text(info.model_dump_json())
        assert not local_server.is_server_process(other.pid)  # a live process, not GraphLemon's server
        assert local_server.status(directory)["state"] == "stopped"
        assert local_server.stop(directory) is None and other.poll() is None  # and never signalled
    finally:
        other.kill()
        other.wait()
    assert not local_server.is_server_process(1)  # init: another user's process
    (directory / local_server.INFO_FILE).write_bytes(b"\xff{not json")
    assert local_server.read_info(directory) is None and local_server.status(directory)["state"] == "stopped"


@pytest.mark.system
@pytest.mark.parametrize(
    ("env", "exit_code", "code"),
    [({"GRAPHLEMON_PREFECT_SERVER_IDLE_MINUTES": "nan"}, 2, "INVALID_PARAM"),
     ({"GRAPHLEMON_CONFIG_DIR": "{file}"}, 1, "IO_ERROR"),
     ({"GRAPHLEMON_CONFIG_DIR": "{file}/[bold]x"}, 1, "IO_ERROR")],
)  # fmt: skip
def test_bad_settings_are_clean_errors_and_start_nothing(tmp_path, env, exit_code, code):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    env = {"GRAPHLEMON_CONFIG_DIR": str(tmp_path / "config"), **{k: v.format(file=a_file) for k, v in env.items()}}
    out = subprocess.run([*GRAPHLEMON, "server", "start"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})  # fmt: skip
    assert out.returncode == exit_code and out.stderr.startswith(f"error[{code}]"), out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "config" / "prefect-server" / "server.json").exists()


@pytest.mark.parametrize("raw", ["0", "-3", "soon", "nan", "inf", "1e400"])
def test_idle_minutes_must_be_a_positive_number(raw, monkeypatch):
    monkeypatch.setenv("GRAPHLEMON_PREFECT_SERVER_IDLE_MINUTES", raw)
    with pytest.raises(GraphLemonError) as exc:
        local_server.idle_minutes()
    assert exc.value.code == "INVALID_PARAM" and raw in exc.value.message


def test_an_unknown_server_variant_is_refused(monkeypatch):
    from graphlemon.flows.temporary_api import server_variant

    monkeypatch.setenv("GRAPHLEMON_PREFECT_SERVER", "shared")
    with pytest.raises(GraphLemonError) as exc:
        server_variant()
    assert exc.value.code == "INVALID_PARAM" and "reused, temporary" in exc.value.message


def test_the_loopback_ca_file_holds_one_certificate_that_ssl_loads(tmp_path):
    import ssl

    path = local_server.loopback_ca_file(tmp_path)
    assert path.read_text().count("BEGIN CERTIFICATE") == 1
    assert ssl.create_default_context(cafile=str(path)).cert_store_stats()["x509_ca"] == 1


def test_its_clients_skip_the_csrf_token_always_and_the_version_check_when_it_runs_the_installed_prefect(tmp_path):
    from datetime import UTC, datetime

    info = local_server.ServerInfo(pid=1, port=9, url="http://127.0.0.1:9/api", started_at=datetime.now(UTC),
                                   idle_minutes=5, prefect_version=local_server.installed_prefect())  # fmt: skip
    same = local_server.client_settings(tmp_path, info)
    assert same["PREFECT_API_URL"] == info.url and same["PREFECT_CLIENT_CSRF_SUPPORT_ENABLED"] == "false"
    assert same["PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED"] == "false"
    older = local_server.client_settings(tmp_path, info.model_copy(update={"prefect_version": "3.8.0"}))
    assert "PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED" not in older  # another Prefect: its version is checked


class _Locked:
    """Prefect's own error path: a handler raising SQLite's "database is locked", turned into a 503 by the server's
    exception handler, `locked` times, then 201. Records each request body it saw."""

    def __init__(self, locked: int, retry_after: bool = False):
        from prefect.server.api.server import custom_internal_exception_handler

        self.bodies: list[bytes] = []
        self.app = FastAPI()
        self.app.add_exception_handler(Exception, custom_internal_exception_handler)

        @self.app.post("/api/task_runs/")
        async def create(request: Request):
            import sqlite3

            import sqlalchemy.exc

            self.bodies.append(await request.body())
            if len(self.bodies) <= locked:
                if retry_after:
                    return JSONResponse({"exception_message": "maintenance"}, 503, headers={"Retry-After": "5"})
                raise sqlalchemy.exc.OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))
            return JSONResponse({"id": "r1"}, 201)


def _post(app, body: bytes) -> tuple[int, float]:
    import asyncio

    import httpx

    from graphlemon.flows.local_server import Activity, RetryLocked

    async def post():
        transport = httpx.ASGITransport(app=RetryLocked(app, Activity()), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://server") as client:
            started = time.monotonic()
            response = await client.post("/api/task_runs/", content=body)
            return response.status_code, time.monotonic() - started

    return asyncio.run(post())


@pytest.mark.system
def test_a_locked_sqlite_is_retried_on_the_server_within_milliseconds_with_the_body_replayed():
    locked = _Locked(locked=2)
    status, took = _post(locked.app, b'{"name": "attempt"}')
    assert status == 201 and locked.bodies == [b'{"name": "attempt"}'] * 3
    assert took < 1.0  # 20 + 50 ms of waiting, not the client's 2 s back-off


@pytest.mark.system
def test_a_lock_that_outlasts_the_quick_retries_reaches_the_client_as_its_503():
    from graphlemon.flows.local_server import QUICK_S

    locked = _Locked(locked=len(QUICK_S) + 1)
    status, _ = _post(locked.app, b"{}")
    assert status == 503 and len(locked.bodies) == len(QUICK_S) + 1  # then the client's own back-off


def test_a_503_that_says_when_to_come_back_is_passed_on_at_once():
    locked = _Locked(locked=1, retry_after=True)
    status, _ = _post(locked.app, b"{}")
    assert status == 503 and len(locked.bodies) == 1


def _graphlemon_run_starts_the_local_server_once_and_the_next_run_reuses_it(
    config: Path, tmp_path: Path, stopped_pid: int
) -> dict:
    """Two `graphlemon run`s with no Prefect API configured: one local server for both, each run recorded in it
    under its task's name; `GRAPHLEMON_PREFECT_SERVER=temporary` leaves it out (Prefect's temporary server)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env = {**os.environ, "GRAPHLEMON_CONFIG_DIR": str(config)}

    def run(project, **extra: str) -> dict:
        out = subprocess.run([*GRAPHLEMON, "run", "Build calc", "--project", str(project.root), "--playbook",
                              str(CALC / "playbook.yaml"), "--engine", "prefect", "--json"],
                             env={**env, **extra}, capture_output=True, text=True, timeout=600)  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout)

    first = run(make_repo(tmp_path / "a", CALC / "repo"))
    server = _server(config, "status")  # started again after its idle stop, the database kept
    assert server["state"] == "running" and server["pid"] != stopped_pid
    assert server["prefect_version"] == local_server.installed_prefect()
    second = run(make_repo(tmp_path / "b", CALC / "repo"))
    assert _server(config, "status")["pid"] == server["pid"]  # reused, not started again
    third = run(make_repo(tmp_path / "c", CALC / "repo"), GRAPHLEMON_PREFECT_SERVER="temporary")
    with temporary_settings({PREFECT_API_URL: server["url"]}), get_client(sync_client=True) as client:
        names = {r.name for r in client.read_flow_runs() if r.name.startswith("devloop")}
    assert names == {f"devloop · Build calc · {t['task_id']}" for t in (first, second)}, names
    assert third["status"] == "done" and third["task_id"] not in " ".join(names)
    return server
