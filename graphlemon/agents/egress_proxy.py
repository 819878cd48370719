"""claude_code's only way out of its sandbox: an HTTP proxy on a Unix socket that lets through allowed hosts only.

The design of Anthropic's sandbox-runtime: the sandbox has a network namespace of its own (loopback only: no host
TCP, no host loopback service, none of the host's abstract Unix sockets), and its one way out is this proxy's Unix
socket, bound into it; inside, `egress_bridge.py` listens on 127.0.0.1 and carries each connection to the socket,
and HTTP_PROXY / HTTPS_PROXY name that listener. The proxy decides each destination here, on the host:

* `CONNECT host:port` (HTTPS and any tunnel) and absolute-form HTTP requests (`GET http://host:port/...`) only;
  anything else is 405.
* The destination must match a rule (`EgressRule`: host and port exactly, or `*.suffix`); by default the only rule
  is the API's host: `ANTHROPIC_BASE_URL`'s host and port, else `api.anthropic.com:443`. `GRAPHLEMON_CLAUDE_EGRESS`
  (or `AgentSettings.claude_egress`) adds rules: `host[:port][=address]`, port 443 when left out, `=address`
  pinning the name to an address on the host side (a local gateway, a test's fake upstream).
* An IP literal is refused unless a rule names that literal itself.
* A name is resolved once, here; an address that is loopback, private, link-local, multicast, reserved or
  unspecified is refused unless the rule pins it (DNS rebinding cannot turn an allowed name into an inside address),
  and the connection goes to the address that was checked.
Each refusal answers 403 with the reason and is kept in `refusals` (the turn records them as violations).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import invalid_param
from ..testrun.egress_bridge import pump

DEFAULT_API = "https://api.anthropic.com"
HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 600.0
MAX_CONNECTIONS = 64
SETTING = "GRAPHLEMON_CLAUDE_EGRESS"


@dataclass(frozen=True)
class EgressRule:
    host: str  # lower case, no trailing dot; `*.example.com` for any name under it
    port: int
    address: str | None = None  # pinned on the host side

    def matches(self, host: str, port: int) -> bool:
        if port != self.port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and host != self.host[2:]
        return host == self.host


def parse_rules(entries: Iterable[str]) -> list[EgressRule]:
    """`host[:port][=address]` each (`[::1]:8443` for an IPv6 literal); INVALID_PARAM for a malformed one."""
    rules = []
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        target, _, address = text.partition("=")
        host, port = _split_host_port(target.strip(), default=443, what=f"{SETTING} entry {entry!r}")
        if address.strip():
            try:
                address = str(ipaddress.ip_address(address.strip()))
            except ValueError:
                raise invalid_param(f"{SETTING} entry {entry!r}: {address!r} is not an IP address") from None
        rules.append(EgressRule(host, port, address.strip() or None))
    return rules


def default_rules(env: Mapping[str, str]) -> list[EgressRule]:
    """The API's host: what `ANTHROPIC_BASE_URL` names (scheme's port when it names none), else api.anthropic.com."""
    url = urlsplit(env.get("ANTHROPIC_BASE_URL", "").strip() or DEFAULT_API)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise invalid_param(f"ANTHROPIC_BASE_URL {env.get('ANTHROPIC_BASE_URL')!r} is not an http(s) URL")
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        raise invalid_param(f"ANTHROPIC_BASE_URL {env.get('ANTHROPIC_BASE_URL')!r} has a bad port") from None
    return [EgressRule(_normal(url.hostname), port)]


def _split_host_port(target: str, *, default: int, what: str) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port_text = rest.removeprefix(":") if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise invalid_param(f"{what}: {target!r} is not host:port")
    elif target.count(":") == 1:
        host, port_text = target.split(":")
    else:
        host, port_text = target, ""
    if not host or (port_text and not port_text.isdigit()):
        raise invalid_param(f"{what}: {target!r} is not host:port")
    port = int(port_text) if port_text else default
    if not 0 < port < 65536:
        raise invalid_param(f"{what}: port {port} is out of range")
    return _normal(host), port


def _normal(host: str) -> str:
    return host.strip().rstrip(".").lower()


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _inside(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """An address no name on the allow-list should lead to unless the person pinned it."""
    mapped = getattr(address, "ipv4_mapped", None)
    address = mapped or address
    return not address.is_global or address.is_multicast


class Refused(Exception):
    """A destination the rules do not allow (the message says why)."""


@dataclass
class EgressProxy:
    """The proxy for one claude turn: `with EgressProxy(rules) as proxy:` serves on `proxy.socket_path`."""

    rules: list[EgressRule]
    refusals: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._folder = Path()
        self.socket_path = Path()  # set when it serves
        self._server: socket.socket | None = None
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._stop = threading.Event()

    def __enter__(self) -> EgressProxy:
        self._folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-egress-{os.getpid()}-"))
        self.socket_path = self._folder / "egress.sock"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.socket_path))
        self.socket_path.chmod(0o666)  # the sandbox's user connects; the folder keeps everyone else out
        self._folder.chmod(0o711)
        server.listen(MAX_CONNECTIONS)
        server.settimeout(0.5)
        self._server = server
        threading.Thread(target=self._serve, name="egress-proxy", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.close()
        self.socket_path.unlink(missing_ok=True)
        try:
            self._folder.rmdir()
        except OSError:
            pass

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()  # type: ignore[union-attr]
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                _answer(client, 503, "too many connections through the sandbox's proxy")
                continue
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(HEAD_TIMEOUT_S)
            head, rest = _read_head(client)
            method, target, version = _request_line(head)
            if method == "CONNECT":
                host, port = _split_host_port(target, default=443, what="CONNECT")
                upstream = self._open(host, port, f"CONNECT {target}")
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                url = urlsplit(target)
                if url.scheme != "http" or not url.hostname or url.username or url.password:
                    raise Refused(f"{method} {target[:200]}: only CONNECT and absolute http:// requests go through")
                try:
                    port = url.port or 80
                except ValueError:
                    raise Refused(f"{target[:200]}: bad port") from None
                upstream = self._open(_normal(url.hostname), port, f"{method} {url.hostname}:{port}")
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                upstream.sendall(_origin_form(head, method, path, version))
            if rest:
                upstream.sendall(rest)
            _relay(client, upstream)
        except Refused as why:
            with self._lock:
                self.refusals.append(str(why))
            _answer(client, 403, f"refused by the sandbox's egress proxy: {why}")
        except (OSError, ValueError) as exc:
            _answer(client, 502 if upstream is None else 500, f"sandbox's egress proxy: {exc}")
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    sock.close()
            self._slots.release()

    def _open(self, host: str, port: int, what: str) -> socket.socket:
        """A connection to an allowed destination, at the address that was checked."""
        literal = _literal(host.strip("[]"))
        rule = next((r for r in self.rules if r.matches(str(literal) if literal else host, port)), None)
        if rule is None:
            raise Refused(f"{what}: {host}:{port} is not on the allow-list")
        if rule.address is not None:
            addresses = [rule.address]
        elif literal is not None:
            addresses = [str(literal)]  # the rule names this literal itself
        else:
            addresses = self._resolve(host, port, what)
        with self._lock:
            self.allowed.append(f"{host}:{port}")
        last: OSError | None = None
        for address in addresses:
            try:
                return socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S)
            except OSError as exc:
                last = exc
        raise OSError(f"{host}:{port} cannot be reached: {last}")

    @staticmethod
    def _resolve(host: str, port: int, what: str) -> list[str]:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Refused(f"{what}: {host} does not resolve: {exc}") from None
        found = [str(info[4][0]) for info in infos]
        inside = [a for a in found if _inside(ipaddress.ip_address(a.split("%")[0]))]
        if inside:  # one inside address is enough to refuse: a rebinding name answers with both
            raise Refused(f"{what}: {host} resolves to {inside[0]}, an address inside this machine or network")
        return list(dict.fromkeys(found))


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise Refused("request head too large")
        chunk = sock.recv(4096)
        if not chunk:
            raise Refused("connection closed before a request")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _request_line(head: bytes) -> tuple[str, str, str]:
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise Refused(f"not an HTTP request: {line[:100]!r}")
    return parts[0].upper(), parts[1], parts[2]


def _origin_form(head: bytes, method: str, path: str, version: str) -> bytes:
    """The request as the upstream server reads it: origin-form, no proxy headers, one request per connection."""
    lines = head.split(b"\r\n")[1:]
    kept = [line for line in lines if not line.lower().startswith((b"proxy-", b"connection:", b"keep-alive:"))]
    first = f"{method} {path} {version}".encode("latin-1")
    return b"\r\n".join([first, *kept, b"Connection: close"]) + b"\r\n\r\n"


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Bytes both ways until either side closes (or stays idle IDLE_TIMEOUT_S)."""
    a.settimeout(IDLE_TIMEOUT_S)
    b.settimeout(IDLE_TIMEOUT_S)
    back = threading.Thread(target=pump, args=(b, a), daemon=True)
    back.start()
    pump(a, b)
    back.join(IDLE_TIMEOUT_S)


def _answer(sock: socket.socket, status: int, text: str) -> None:
    reason = {403: "Forbidden", 405: "Method Not Allowed", 500: "Internal Server Error", 502: "Bad Gateway",
              503: "Service Unavailable"}.get(status, "Error")  # fmt: skip
    body = (text[:500] + "\n").encode("utf-8", "replace")
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    try:
        sock.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
    except OSError:
        pass
