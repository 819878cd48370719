"""GraphLemon's local Prefect server: started once in the background by `graphlemon run` (or `resume`) when no
Prefect API is configured, reused by the next runs of the same user, stopped when idle (docs/prefect.md).

This module is the bookkeeping, with no Prefect import: where the server's state lives, whether the recorded server
is this user's and answers, starting one (`python -m graphlemon.flows.local_server`, the server process itself), the leases of
the commands using it, and stopping it. Its state folder, `prefect-server/` in the user's GraphLemon folder
(`$GRAPHLEMON_CONFIG_DIR`, else `~/.config/graphlemon`), is private to the user (mode 0700): `server.json` (pid, port,
URL), `leases/<pid>` (one per command using the server), `prefect-home/` (its database), `server.log`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from .errors import ErrorCode, GraphLemonError
from .processes import pid_alive
from .redact import is_secret_name  # the server outlives the command: none of its secrets

SERVER_MODULE = "graphlemon.flows.local_server"
INFO_FILE = "server.json"
IDLE_MINUTES = 30  # no request and no command using it for this long: the server stops
STARTUP_S = 180  # a first start creates and migrates its database: tens of seconds on a busy 2-core machine
CODE_ROOT = Path(__file__).resolve().parents[1]  # where `flows` and `graphlemon` are importable from


class ServerInfo(BaseModel):
    pid: int
    port: int
    url: str  # the API URL: http://127.0.0.1:<port>/api
    started_at: datetime
    idle_minutes: float
    prefect_version: str = ""  # the Prefect it serves (installed here when it started)


def state_dir() -> Path:
    from .project import config_dir

    directory = config_dir() / "prefect-server"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        (directory / "leases").mkdir(exist_ok=True, mode=0o700)
    except OSError as exc:
        raise GraphLemonError(ErrorCode.IO_ERROR, f"cannot create the local Prefect server's folder {directory}: "
                              f"{exc.strerror or exc}") from exc  # fmt: skip
    if directory.stat().st_uid != os.getuid():
        raise GraphLemonError(ErrorCode.PERMISSION_DENIED, f"{directory} belongs to another user: a local Prefect "
                              "server is never shared between users (set GRAPHLEMON_CONFIG_DIR)")  # fmt: skip
    return directory


def idle_minutes() -> float:
    raw = os.environ.get("GRAPHLEMON_PREFECT_SERVER_IDLE_MINUTES", "").strip()
    if not raw:
        return IDLE_MINUTES
    try:
        minutes = float(raw)
    except ValueError:
        minutes = -1.0
    if not 0 < minutes < 10**6:  # nan and inf fail too
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"GRAPHLEMON_PREFECT_SERVER_IDLE_MINUTES={raw!r}: expected "
                              "a positive number of minutes")  # fmt: skip
    return minutes


def read_info(directory: Path) -> ServerInfo | None:
    try:
        return ServerInfo.model_validate_json((directory / INFO_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def is_server_process(pid: int) -> bool:
    """`pid` is this user's GraphLemon server process (a recycled pid running something else is not)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return pid_alive(pid) and SERVER_MODULE.encode() in argv


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def _start_lock(directory: Path):
    with open(directory / "start.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two commands starting at once: one server
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(directory: Path, minutes: float) -> ServerInfo:
    """Spawn the server in its own session (a command's Ctrl-C does not reach it) and record it; it may still be
    starting: `wait_ready`."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_") and not is_secret_name(k)}
    env.update({
        "PREFECT_HOME": str(directory / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_API_CSRF_PROTECTION_ENABLED": "false",  # its clients send no CSRF token (client_settings)
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": url,
        "PYTHONPATH": os.pathsep.join(p for p in (str(CODE_ROOT), env.get("PYTHONPATH", "")) if p),
    })  # fmt: skip
    argv = [sys.executable, "-m", SERVER_MODULE, "--state-dir", str(directory), "--port", str(port),
            "--idle-minutes", str(minutes)]  # fmt: skip
    with open(directory / "server.log", "ab") as log:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, cwd=directory)  # fmt: skip
    info = ServerInfo(pid=proc.pid, port=port, url=url, started_at=datetime.now(UTC), idle_minutes=minutes,
                      prefect_version=installed_prefect())  # fmt: skip
    tmp = directory / f"{INFO_FILE}.tmp"
    tmp.write_text(info.model_dump_json())
    tmp.replace(directory / INFO_FILE)
    return info


def ensure(directory: Path) -> tuple[ServerInfo, bool]:
    """The running server, or a new one (True: just started, maybe not ready yet). A server another command is
    still starting is waited for, not replaced; one that does not answer after its start-up time is. The caller's
    lease is taken under the same lock, so an idle server cannot stop between the check and the lease."""
    with _start_lock(directory):
        info = read_info(directory)
        fresh = info is None or not is_server_process(info.pid)
        if not fresh and not healthy(info.url):
            started = (datetime.now(UTC) - info.started_at).total_seconds()
            if started > STARTUP_S:
                stop_process(info.pid)  # alive but stuck: replaced
                fresh = True
        if not fresh and info.prefect_version != installed_prefect() and not live_leases(directory):
            stop_process(info.pid)  # Prefect was upgraded (or another install started it) and nothing uses it
            fresh = True
        if fresh:
            info = start(directory, idle_minutes())
        take_lease(directory)
        return info, fresh


def installed_prefect() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefect")
    except PackageNotFoundError:
        return ""


def wait_ready(directory: Path, info: ServerInfo, timeout: float = STARTUP_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(info.url):
            return
        if not pid_alive(info.pid):
            break
        time.sleep(0.3)
    raise GraphLemonError(ErrorCode.IO_ERROR, f"the local Prefect server ({info.url}) did not start: "
                          f"{log_tail(directory) or 'no output'} (its log: {directory / 'server.log'})")  # fmt: skip


def log_tail(directory: Path, lines: int = 5) -> str:
    try:
        text = (directory / "server.log").read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def take_lease(directory: Path) -> None:
    """This process uses the server until it exits (the server counts leases of live processes only)."""
    (directory / "leases" / str(os.getpid())).touch()


def release_lease(directory: Path) -> None:
    (directory / "leases" / str(os.getpid())).unlink(missing_ok=True)


def live_leases(directory: Path) -> list[int]:
    pids = []
    for entry in (directory / "leases").iterdir():
        pid = int(entry.name) if entry.name.isdigit() else 0
        if pid_alive(pid):
            pids.append(pid)
        else:
            entry.unlink(missing_ok=True)
    return pids


def stop_process(pid: int, grace_s: float = 20.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)  # the server leads its own session: its services go with it
    deadline = time.monotonic() + grace_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def stop(directory: Path) -> ServerInfo | None:
    """Stop the recorded server (None: none was running)."""
    with _start_lock(directory):
        info = read_info(directory)
        if info is None or not is_server_process(info.pid):
            (directory / INFO_FILE).unlink(missing_ok=True)
            return None
        stop_process(info.pid)
        (directory / INFO_FILE).unlink(missing_ok=True)
        return info


def status(directory: Path) -> dict:
    info = read_info(directory)
    alive = info is not None and is_server_process(info.pid)
    answering = alive and healthy(info.url)
    return {
        "state": "running" if answering else "starting" if alive else "stopped",
        "url": info.url if alive else None,
        "ui": info.url.removesuffix("/api") if alive else None,
        "pid": info.pid if alive else None,
        "started_at": info.started_at.isoformat() if alive else None,
        "prefect_version": info.prefect_version if alive else None,
        "idle_minutes": info.idle_minutes if alive else idle_minutes(),
        "commands_using_it": len(live_leases(directory)),
        "folder": str(directory),
    }


def client_settings(directory: Path, info: ServerInfo) -> dict[str, str]:
    """The Prefect settings (environment variables) of a command using this server. Besides its URL and the CA file
    (`loopback_ca_file`), two requests every new API client makes are skipped: the CSRF token (this server enforces
    no CSRF protection: `start` turns it off) and the API version check when the server runs the installed Prefect
    (`ensure` replaces a server of another version once nothing uses it)."""
    settings = {"PREFECT_API_URL": info.url, "PREFECT_API_SSL_CERT_FILE": str(loopback_ca_file(directory)),
                "PREFECT_CLIENT_CSRF_SUPPORT_ENABLED": "false"}  # fmt: skip
    if info.prefect_version == installed_prefect():
        settings["PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED"] = "false"
    return settings


def loopback_ca_file(directory: Path) -> Path:
    """A CA file of one certificate, for the clients of this plain-http loopback API.

    Prefect builds a verified TLS context from `PREFECT_API_SSL_CERT_FILE` (else certifi's bundle of ~150
    certificates: 26 ms on an idle core, 100 ms+ under load) for every API client it creates — per subflow, per
    artifact — even when the API URL is `http://`, where no TLS happens and the context is never used. Pointing the
    setting at a one-certificate file makes that context cost ~1 ms; an `https://` API is never given this file.
    """
    import certifi

    path = directory / "loopback-ca.pem"
    if not path.exists():
        bundle = Path(certifi.where()).read_text()
        end = "-----END CERTIFICATE-----"
        tmp = directory / f"loopback-ca.{os.getpid()}.tmp"
        tmp.write_text(bundle[: bundle.index(end) + len(end)] + "\n")
        tmp.replace(path)
    return path
