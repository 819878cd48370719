"""claude_code's egress proxy on the host side: its rules, and what it answers on its Unix socket (a real proxy, a
real local upstream; the sandboxed side is in test_agents_claude_confined.py)."""

from __future__ import annotations

import socket
import threading

import pytest

from graphlemon.agents.egress_proxy import EgressProxy, EgressRule, default_rules, parse_rules
from graphlemon.agents.settings import AgentSettings
from graphlemon.errors import ErrorCode, GraphLemonError


def test_rules_parse_host_port_and_pinned_address_and_the_default_is_the_api_s_host():
    assert parse_rules(["api.example.com", "Gateway.Test.:8443=127.0.0.1", "[::1]:4000", "*.pypi.org"]) == [
        EgressRule("api.example.com", 443), EgressRule("gateway.test", 8443, "127.0.0.1"), EgressRule("::1", 4000),
        EgressRule("*.pypi.org", 443),
    ]  # fmt: skip
    assert default_rules({}) == [EgressRule("api.anthropic.com", 443)]
    assert default_rules({"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000/v1"}) == [EgressRule("127.0.0.1", 4000)]
    assert EgressRule("*.pypi.org", 443).matches("files.pypi.org", 443)
    assert not EgressRule("*.pypi.org", 443).matches("pypi.org", 443)
    assert not EgressRule("*.pypi.org", 443).matches("evilpypi.org", 443)
    for bad in ("host:x", "host:70000", "host=not-an-ip", ":443"):
        with pytest.raises(GraphLemonError) as err:
            parse_rules([bad])
        assert err.value.code == ErrorCode.INVALID_PARAM
    with pytest.raises(GraphLemonError):
        AgentSettings(claude_egress=["host:x"])  # refused where the setting is read, not at the first turn
    assert AgentSettings.from_env({"GRAPHLEMON_CLAUDE_EGRESS": "a.test, b.test:80"}).claude_egress == [
        "a.test", "b.test:80"]  # fmt: skip


def _ask(proxy: EgressProxy, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(str(proxy.socket_path))
        s.sendall(request)
        out = b""
        while chunk := s.recv(4096):
            out += chunk
            if request.startswith(b"CONNECT") and b"\r\n\r\n" in out:
                break
        return out


@pytest.fixture
def upstream():
    server = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            seen.append(conn.recv(4096))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], seen
    server.close()


@pytest.mark.system
def test_the_proxy_lets_through_its_rules_only(upstream):
    port, seen = upstream
    rules = [EgressRule("api.allowed.test", port, "127.0.0.1"), EgressRule("localhost", port)]
    with EgressProxy(rules) as proxy:
        tunnel = _ask(proxy, f"CONNECT api.allowed.test:{port} HTTP/1.1\r\n\r\n".encode())
        plain = _ask(proxy, f"GET http://api.allowed.test:{port}/v1/x?y=1 HTTP/1.1\r\nHost: a\r\n"
                            "Proxy-Authorization: secret\r\nConnection: keep-alive\r\n\r\n".encode())  # fmt: skip
        refused = {
            "other name": _ask(proxy, f"CONNECT api.other.test:{port} HTTP/1.1\r\n\r\n".encode()),
            "IP literal": _ask(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode()),
            "other port": _ask(proxy, f"CONNECT api.allowed.test:{port + 1} HTTP/1.1\r\n\r\n".encode()),
            "inside by DNS": _ask(proxy, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode()),
            "https absolute": _ask(proxy, f"GET https://api.allowed.test:{port}/ HTTP/1.1\r\n\r\n".encode()),
            "userinfo": _ask(proxy, f"GET http://u:p@api.allowed.test:{port}/ HTTP/1.1\r\n\r\n".encode()),
            "not HTTP": _ask(proxy, b"\x16\x03\x01 hello\r\n\r\n"),
        }
        refusals = list(proxy.refusals)
    assert tunnel.startswith(b"HTTP/1.1 200 Connection Established")
    assert plain.startswith(b"HTTP/1.1 200 OK") and plain.endswith(b"ok")
    forwarded = seen[-1].decode()
    assert forwarded.startswith("GET /v1/x?y=1 HTTP/1.1\r\n") and "Proxy-Authorization" not in forwarded
    assert "Connection: close" in forwarded and "keep-alive" not in forwarded
    for name, answer in refused.items():
        assert answer.startswith(b"HTTP/1.1 403"), (name, answer)
    assert b"resolves to 127.0.0.1" in refused["inside by DNS"] and len(refusals) == len(refused)
    assert not proxy.socket_path.exists()
