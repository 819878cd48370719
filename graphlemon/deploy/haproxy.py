"""The public address: Debian's HAProxy in front of the live instance, switched at run time over its stats socket.

The backend `live` has two server slots, `blue` and `green`. The live instance sits in one; a cutover puts the
candidate's address into the other slot, marks it `ready`, then puts the old slot into `maint` — one runtime-API
call carrying both commands, no reload, no dropped connection (a request already on the old instance finishes
there). A rollback is the same switch the other way. HAProxy is started by the supervisor with a config written
into the deploy folder (never /etc) and stopped by its PID.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel

from ..errors import ErrorCode, GraphLemonError
from ..processes import pid_alive

SLOTS = ("blue", "green")
BACKEND = "live"
PARKED_PORT = 9  # the idle slot points at the discard port while in maint: it is never sent a request

CONFIG = """\
global
    stats socket {socket} mode 600 level admin
    pidfile {pidfile}
    log stderr format raw local0 notice

defaults
    mode http
    log global
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch

frontend public
    bind 127.0.0.1:{public_port}
    default_backend {backend}

backend {backend}
    server blue 127.0.0.1:{live_port}
    server green 127.0.0.1:{parked} disabled
"""


class ProxyState(BaseModel):
    pid: int
    public_port: int
    socket: str
    config: str
    log: str


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy",) if os.path.exists(p)), None)
    if found is None:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, "haproxy is not installed (Debian: apt-get install haproxy)")
    return found


def start(folder: Path, public_port: int, live_port: int, timeout: float = 15) -> ProxyState:
    _require_free(public_port)  # else another listener answers the readiness probe before haproxy exits
    folder.mkdir(parents=True, exist_ok=True)
    sock, cfg, log = folder / "haproxy.sock", folder / "haproxy.cfg", folder / "haproxy.log"
    sock.unlink(missing_ok=True)
    cfg.write_text(CONFIG.format(socket=sock, pidfile=folder / "haproxy.pid", public_port=public_port,
                                 live_port=live_port, backend=BACKEND, parked=PARKED_PORT))  # fmt: skip
    check = subprocess.run([haproxy_binary(), "-c", "-q", "-f", str(cfg)], capture_output=True, text=True)
    if check.returncode != 0:
        raise GraphLemonError(ErrorCode.IO_ERROR, f"haproxy refused its config {cfg}: {check.stderr.strip()}")
    with open(log, "ab") as out:  # -db: stay in the foreground, so the PID we hold is haproxy's own
        proc = subprocess.Popen([haproxy_binary(), "-db", "-f", str(cfg)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    state = ProxyState(pid=proc.pid, public_port=public_port, socket=str(sock), config=str(cfg), log=str(log))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise GraphLemonError(ErrorCode.IO_ERROR, f"haproxy exited at start: {Path(log).read_text()[-800:]}")
        if sock.exists() and _port_open(public_port):
            return state
        time.sleep(0.05)
    stop(state)
    raise GraphLemonError(ErrorCode.IO_ERROR, f"haproxy did not listen on 127.0.0.1:{public_port} in {timeout:g} s")


def _require_free(port: int) -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free for haproxy too
        try:
            s.bind(("127.0.0.1", port))
        except OSError as err:
            raise GraphLemonError(ErrorCode.IO_ERROR,
                                  f"haproxy cannot listen on 127.0.0.1:{port}: {err.strerror}") from err  # fmt: skip


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def command(state: ProxyState, cmd: str, timeout: float = 5) -> str:
    """One runtime-API call (several commands may be joined with ';': HAProxy runs them in order, at once)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(state.socket)
        except OSError as exc:
            raise GraphLemonError(ErrorCode.IO_ERROR, f"haproxy runtime API {state.socket}: {exc}") from None
        s.sendall(cmd.encode() + b"\n")
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class Slot(BaseModel):
    name: str
    port: int
    state: str  # ready / maint / drain


def slots(state: ProxyState) -> dict[str, Slot]:
    """The two slots as HAProxy sees them now (`show servers state`)."""
    out: dict[str, Slot] = {}
    for line in command(state, f"show servers state {BACKEND}").splitlines():
        parts = line.split()
        if len(parts) < 19 or parts[3] not in SLOTS:
            continue
        running = int(parts[5]) == 2  # srv_op_state: 2 = running; a slot in maint is 0 (stopped)
        out[parts[3]] = Slot(name=parts[3], port=int(parts[18]), state="ready" if running else "maint")
    return out


def active_slot(state: ProxyState) -> Slot:
    ready = [s for s in slots(state).values() if s.state == "ready"]
    if len(ready) != 1:
        raise GraphLemonError(ErrorCode.IO_ERROR, f"haproxy has {len(ready)} ready servers, expected one: {ready}")
    return ready[0]


def switch_to(state: ProxyState, port: int) -> Slot:
    """Send new requests to 127.0.0.1:port: the idle slot takes the address and goes ready, then the active slot
    goes to maint, in one runtime-API call (no reload). Returns the new active slot."""
    current = active_slot(state)
    if current.port == port:
        return current
    idle = next(s for s in SLOTS if s != current.name)
    reply = command(state, "; ".join([
        f"set server {BACKEND}/{idle} addr 127.0.0.1 port {port}",
        f"set server {BACKEND}/{idle} state ready",
        f"set server {BACKEND}/{current.name} state maint",
    ]))  # fmt: skip
    now = active_slot(state)
    if now.port != port:
        raise GraphLemonError(ErrorCode.IO_ERROR, f"haproxy did not switch to port {port}: {reply.strip()}")
    return now


def alive(state: ProxyState) -> bool:
    return pid_alive(state.pid)


def stop(state: ProxyState) -> None:
    stop_group(state.pid)


def stop_group(pid: int, grace: float = 5) -> None:
    """SIGTERM the process group led by `pid`, SIGKILL what is left after `grace` seconds."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and pid_alive(pid):
        _reap(pid)
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
