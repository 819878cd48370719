"""The proxy: Debian's HAProxy started with the supervisor's config, switched between two real HTTP servers over its
runtime API while a client keeps sending requests (no failed request), stopped by PID."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from graphlemon.deploy import haproxy

pytestmark = pytest.mark.system


def _server(name: str) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"commit": name}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _get(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
        return json.loads(resp.read())["commit"]


@pytest.fixture
def proxy(tmp_path: Path):
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        pytest.fail("Debian's haproxy is not installed: `make fixtures` installs it (apt-get install haproxy)")
    blue, green = _server("blue"), _server("green")
    state = haproxy.start(tmp_path / "proxy", _free(), blue.server_address[1])
    try:
        yield state, blue.server_address[1], green.server_address[1]
    finally:
        haproxy.stop(state)
        blue.shutdown()
        green.shutdown()
        assert not haproxy.pid_alive(state.pid)


def _free() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_switch_there_and_back_under_load_loses_no_request(proxy):
    state, blue, green = proxy
    assert _get(state.public_port) == "blue"
    assert haproxy.active_slot(state).port == blue
    seen: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def load():
        while not stop.is_set():
            try:
                seen.append(_get(state.public_port))
            except Exception as exc:
                failed.append(repr(exc))

    client = threading.Thread(target=load)
    client.start()
    try:
        while len(seen) < 20:
            stop.wait(0.01)
        assert haproxy.switch_to(state, green).port == green
        n = len(seen)
        while len(seen) < n + 20:
            stop.wait(0.01)
        assert haproxy.switch_to(state, blue).port == blue
        n = len(seen)
        while len(seen) < n + 20:
            stop.wait(0.01)
    finally:
        stop.set()
        client.join(10)
    assert failed == []
    order = [c for i, c in enumerate(seen) if i == 0 or seen[i - 1] != c]
    assert order == ["blue", "green", "blue"]
    assert sorted(s.state for s in haproxy.slots(state).values()) == ["maint", "ready"]


def test_a_public_port_already_taken_is_an_error_naming_haproxy(tmp_path):
    import socket

    from graphlemon.errors import GraphLemonError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(GraphLemonError) as err:
            haproxy.start(tmp_path / "p", taken.getsockname()[1], 1)
    assert err.value.code == "IO_ERROR" and "haproxy" in err.value.message
