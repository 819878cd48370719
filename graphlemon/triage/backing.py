"""Backing services: a connection that failed to an address no unit of the project listens on.

The general fact: when a unit cannot reach a database, cache or queue (connection refused,
timed out or reset to a host:port that belongs to no unit), the environment failed, whatever
status the unit then answered; rewriting a unit's code would not fix it, a rerun may.

A unit's addresses are read from the run itself: the URLs the trace shows it serving
(`unit_id` of each http-trace entry) and the ports its log lines say it listens on.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .oserrors import CONNECTION_FAILED
from .run_context import RunContext
from .rundir import IntegrationFailure
from .signals import Signal, in_window, startup_noise, units_in_prefix, without_frames

# an address in the same message: host:port, "port N", or Python's `("host", N)`
_ADDRESS = re.compile(
    r"(?:(?<![\w/])(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-f:]+\]|[a-z][\w-]*(?:\.[\w-]+)*):(\d{2,5})\b)"
    r"|\bport (\d{2,5})\b|\(['\"][\w.-]+['\"],\s*(\d{2,5})\)",
    re.IGNORECASE,
)
# an outside service's answer that says it cannot serve now: throttled, or its own gateway failed
_BUSY_STATUS = re.compile(
    r"(?<!\d)(?:429|502|503|504)(?!\d)|Too Many Requests|Service Unavailable|Gateway Time-?out|Bad Gateway", re.I
)
_BUSY_CODE = re.compile(r"(?<![\d.:/-])(429|502|503|504)(?![\d.:/-])")
_URL = re.compile(r"\bhttps?://[^\s\"'<>]+", re.IGNORECASE)
_LOOPBACK = re.compile(r"^(?:localhost|127(?:\.\d{1,3}){3}|::1|0\.0\.0\.0)$", re.IGNORECASE)
_LISTENING = re.compile(
    r"\b(?:listening|running|serving|started)\b.*?(?::|\bport\s+|\bon\s+)(\d{2,5})\b", re.IGNORECASE
)


def unit_ports(ctx: RunContext) -> dict[int, str]:
    """port → unit_id for every port the run shows a unit serving or listening on."""
    out: dict[int, str] = {}
    for _line, entry in ctx.trace:
        port = _port_of_url(entry.url)
        if port is not None and entry.unit_id:
            out.setdefault(port, entry.unit_id)
    for line in ctx.log:
        m = _LISTENING.search(line.text)
        unit = units_in_prefix(ctx, line.text)
        if m and unit:
            out.setdefault(int(m.group(1)), unit[0])
    return out


def backing_service_signals(ctx: RunContext, failure: IntegrationFailure) -> list[Signal]:
    """Failed connections to addresses that belong to no unit, on the failing step or in its time window."""
    ports = unit_ports(ctx)
    out: list[Signal] = []
    result_rel = f"{ctx.run_rel}/result.json"
    for value in (failure.got.error, failure.stack, failure.message, _text(failure.got.body)):
        if value and _foreign(value, ports):
            out.append(Signal("backing_service", True, result_rel, None, value, True))
    trace_rel = f"{ctx.run_rel}/http-trace.ndjson"
    for lineno, entry in ctx.trace:
        if (entry.case, entry.step) != (failure.case, failure.step):
            continue
        for value in (entry.error, _text(entry.response_body)):
            if value and _foreign(value, ports):
                out.append(Signal("backing_service", True, trace_rel, lineno, value, True, entry.unit_id))
    log_rel = f"{ctx.run_rel}/process.log"
    for i, line in enumerate(ctx.log):
        if _foreign(line.text, ports) and in_window(line, failure.ts) and not startup_noise(ctx.log, i):
            unit = (units_in_prefix(ctx, line.text) or [None])[0]
            out.append(Signal("backing_service", True, log_rel, line.lineno, line.text, False, unit))
    return out


def external_service_signals(ctx: RunContext, failure: IntegrationFailure) -> list[Signal]:
    """A unit's log line, in the failing step's window, where a service outside the project (a host that is no
    unit's) answered 429 or a gateway error: the outside service failed, not the unit's code. A line that names
    no address is read so when the case's calls were traced and no unit answered that status, and the line
    names no other unit: none of the project's services gave it, so an outside one did (unless the case expects
    that status: then it is the answer under test)."""
    ports, units = unit_ports(ctx), set(ctx.units.ids())
    log_rel = f"{ctx.run_rel}/process.log"
    traced = [e for _n, e in ctx.trace if e.case == failure.case]
    # what the project's services answered, and what the case expects (a status under test is no outside failure)
    answered = {e.status for e in traced} | {failure.got.status, failure.expected.status}
    out: list[Signal] = []
    for line in ctx.log:
        if not (in_window(line, failure.ts) and _BUSY_STATUS.search(line.text)):
            continue
        urls = _URL.findall(line.text)
        busy = {int(x) for x in _BUSY_CODE.findall(line.text)}
        unanswered = bool(traced) and not urls and bool(busy) and busy.isdisjoint(answered)
        if unanswered and set(units_in_prefix(ctx, line.text)) >= {u for u in units if _names(line.text, u)}:
            unit = (units_in_prefix(ctx, line.text) or [None])[0]
            out.append(Signal("external_service", True, log_rel, line.lineno, line.text, False, unit))
        elif any(_outside(url, ports, units) for url in urls):
            unit = (units_in_prefix(ctx, line.text) or [None])[0]
            out.append(Signal("external_service", True, log_rel, line.lineno, line.text, False, unit))
    return out


def _names(text: str, unit: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(unit)}(?![\w-])", text) is not None


def _outside(url: str, ports: dict[int, str], units: set[str]) -> bool:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return False
    return bool(host) and not _LOOPBACK.match(host) and host not in units and (port is None or port not in ports)


def _foreign(text: str, ports: dict[int, str]) -> bool:
    """The text reports a failed connection, and every address it names belongs to no unit."""
    if not CONNECTION_FAILED.search(text):
        return False
    text = without_frames(text)
    found = [int(next(g for g in m.groups() if g)) for m in _ADDRESS.finditer(text)]
    return bool(found) and all(p not in ports for p in found)


def _port_of_url(url: str) -> int | None:
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None


def _text(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)
