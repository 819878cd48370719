"""Environment signals, each with its voice and time: what failed around the run, and who said so.

A signal is a kind (its names below) found in one piece of run evidence, kept with that evidence's `Said` (voice.py).
This module reports every one it finds, in any voice; the decider (decider.py) lets only those in the
environment's own voice (the runner, the OS, a service outside the project) at or before the failing step
decide `infra_flake`. Two kinds are read from the run's structure rather than from a name:

- `backing_service`: a failed connection (refused, reset, timed out, unreachable) to an address whose port no
  unit of the project serves (a unit's ports: those the trace shows it serving, those its own log lines say it
  listens on). A runner's "waiting for X … attempt 2/30" line followed by X becoming ready is start-up noise.
- `external_service`: a traced call to a host outside the project (not loopback, no unit's name) that answered
  429, 502, 503 or 504. A call served by no unit on the loopback is the case's own stand-in (a fixture).

A `missing_dependency` naming one of the project's own modules is the project's code, not the environment; words
the runner's assertion message quotes from what the case expected or got are theirs, not the runner's.
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd_element import sdd_blocks
from .voice import Said, failure_said, log_times, voiced_log, when_of_step, without_frames

# How runtimes name the kinds the decider keeps: the POSIX errno symbol (`ENOSPC`) and the C library's message
# for it (`os.strerror`), and the other standard names (Python's OSError subclasses, Rust's io::ErrorKind, Java's
# exceptions, Go's and Node's messages). A name says what failed; the voice says whether the environment said it.
# kind -> (errno symbols, other standard names). A symbol this platform lacks is skipped.
_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "port_in_use": (("EADDRINUSE",), ("AddrInUse", "java.net.BindException", "port is already allocated",
                                      r"port \d+ (?:is )?already in use")),
    "disk_full": (("ENOSPC", "EDQUOT"), ("StorageFull", "QuotaExceeded", r"disk (?:is )?full")),
    # the resolver saying "try again" (EAI_AGAIN, SERVFAIL); "no such host" says something of the name itself
    "dns": ((), (r"EAI_AGAIN", "Temporary failure in name resolution", "server misbehaving", "SERVFAIL",
                 r"temporary failure in (?:name|DNS) resolution")),
    "out_of_resources": (("EMFILE", "ENFILE", "ENOMEM"), ("OutOfMemoryError", "heap out of memory", "MemoryError",
                         "Too many open files", r"\bout of memory\b", r"can't start new thread",
                         r"unable to create (?:new )?native thread", r"pids\.max")),
    "missing_dependency": ((), (r"Cannot find module '(?![./])[^']+'", r"No module named '[^']+'",
                                r"error while loading shared libraries", r"cannot open shared object file",
                                r"No matching distribution found")),
    # what a failed connection to another process looks like, whatever the runtime (backing services)
    "connection_failed": (("ETIMEDOUT", "ECONNREFUSED", "ECONNRESET", "ENETUNREACH", "EHOSTUNREACH"),
                          ("ConnectionRefused", "ConnectionReset", "java.net.ConnectException", "connect timeout",
                           "i/o timeout", "socket hang up")),
}  # fmt: skip


def _spellings(kind: str) -> list[str]:
    symbols, names = _NAMES[kind]
    out = list(names)
    for symbol in symbols:
        code = getattr(errno, symbol, None)
        out.append(rf"\b{symbol}\b")
        message = os.strerror(code) if code is not None else ""
        if message and not message.startswith("Unknown error"):
            out.append(re.escape(message))
    return out


def _compile(kind: str) -> re.Pattern[str]:
    return re.compile("|".join(s if s.startswith(r"\b") else rf"(?<!\w){s}" for s in _spellings(kind)), re.I)


PATTERNS: dict[str, re.Pattern[str]] = {kind: _compile(kind) for kind in _NAMES}
KINDS = ("port_in_use", "disk_full", "dns", "out_of_resources", "missing_dependency")

BUSY = frozenset({429, 502, 503, 504})
# an address in the same message: host:port, "port N", or Python's `("host", N)`
_ADDRESS = re.compile(
    r"(?:(?<![\w/])(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-f:]+\]|[a-z][\w-]*(?:\.[\w-]+)*):(\d{2,5})\b)"
    r"|\bport (\d{2,5})\b|\(['\"][\w.-]+['\"],\s*(\d{2,5})\)",
    re.IGNORECASE,
)
_LISTENING = re.compile(r"\b(?:listening|running|serving|started)\b.*?(?::|\bport\s+|\bon\s+)(\d{2,5})\b", re.I)
_RETRY_NOISE = re.compile(r"waiting for|attempt \d+\s*/\s*\d+|retrying|retry \d+", re.IGNORECASE)
_READY = re.compile(r"healthy|ready|listening|running on|startup complete|started", re.IGNORECASE)
_MODULE = re.compile(r"No module named '([\w.]+)'")
_LISTENS = re.compile(r"\blisten(?:s|ing)? on\b\W*(?:port\W*)?(?:[\w.-]+:)?(\d{2,5})\b", re.I)
_HOST = re.compile(r"`([a-z][\w-]*(?:\.[\w-]+)+)`")  # a host name in code spans: `ledger.internal`
_URL = re.compile(r"\bhttps?://([a-z][\w.-]*):(\d{2,5})\b", re.I)
_WORD = re.compile(r"[A-Za-z][\w.-]{3,}")
_LOOPBACK = re.compile(r"^(?:localhost|127(?:\.\d{1,3}){3}|::1|0\.0\.0\.0)$", re.IGNORECASE)


@dataclass(frozen=True)
class EnvSignal:
    kind: str
    said: Said


@dataclass(frozen=True)
class Project:
    """What is the project's own, not the environment's: its ports and host names, its modules, and the case's
    words (what it sent, expected, got and described: text the runner logs from them is theirs)."""

    ports: dict[int, str]
    held: frozenset[int]  # the ports a unit is seen holding in this run (the trace, its own "listening" lines)
    hosts: frozenset[str]
    local: set[str]
    echo: str

    def owns_port(self, port: int) -> bool:
        """A unit's port, or a near-miss of one (8013 for 8031): the unit's address, or its mistake."""
        return port in self.ports or any(near_miss(str(port), str(p)) for p in self.ports)

    def owns_host(self, host: str) -> bool:
        return host.lower() in self.hosts or any(near_miss(host.lower(), h) for h in self.hosts)


def environment_signals(ctx: RunContext, failure: IntegrationFailure) -> list[EnvSignal]:
    """Every environment signal the run shows for this failure, in any voice (the decider reads the voice)."""
    project = _project(ctx, failure)
    out: list[EnvSignal] = []
    for said in failure_said(ctx, failure):  # the failing call's own target is the case's unit, never a backing service
        out += _kinds(said, project, backing=said.voice != "os")
    trace_rel = f"{ctx.run_rel}/http-trace.ndjson"
    for line, e in ctx.trace:
        if e.case != failure.case:
            continue
        when = when_of_step(e.step, failure)
        host = urlsplit(e.url).hostname or ""
        if e.error and not (host and project.owns_host(host) and host.lower() not in project.hosts):
            out += _kinds(Said(trace_rel, line, e.error, "os", e.unit_id, when), project)  # not a misspelled unit host
        server = e.unit_id if e.unit_id in ctx.units.ids() else None
        outside = server is None and bool(host) and not _LOOPBACK.match(host) and not project.owns_host(host)
        if outside and e.status in BUSY:
            said = Said(trace_rel, line, f"{e.url} {e.status}", "service", host, when)
            out.append(EnvSignal("external_service", said))
        if isinstance(e.response_body, str) and (e.status or 0) >= 500:
            voice = "unit" if server else "service" if outside else "fixture"
            out += _kinds(Said(trace_rel, line, e.response_body, voice, server or e.unit_id, when), project)
    log_rel = f"{ctx.run_rel}/process.log"
    voiced = voiced_log(ctx)
    for i, (v, when) in enumerate(zip(voiced, log_times(voiced, failure), strict=True)):
        said = Said(log_rel, v.line.lineno, v.line.text, v.voice, v.speaker, when)
        if not _startup_noise(voiced, i):
            out += _kinds(said, project)
    return out


def _kinds(said: Said, project: Project, *, backing: bool = True) -> list[EnvSignal]:
    text = said.text if len(said.text) <= 16384 else f"{said.text[:8192]}\n{said.text[-8192:]}"
    echo = project.echo if said.voice in ("runner", "unknown") else ""
    out = []
    for kind in KINDS:
        if not any(not echo or m.group(0).lower() not in echo for m in PATTERNS[kind].finditer(text)):
            continue  # every spelling of it is words the runner repeats from the case
        module = _MODULE.search(text)
        if kind == "missing_dependency" and module and module.group(1).split(".")[0] in project.local:
            continue  # the project's own module: its code, not an install
        if kind == "port_in_use" and any(_port(m) in project.held for m in _ADDRESS.finditer(without_frames(text))):
            continue  # a port a unit of this run holds: the project's own processes clash, not the environment's
        if kind == "dns" and any(project.owns_host(w) and w.lower() not in project.hosts for w in _WORD.findall(text)):
            continue  # a near-miss of a unit's host name: the unit's typo, whatever the resolver answered
        out.append(EnvSignal(kind, said))
    if backing and _foreign(text, project):
        out.append(EnvSignal("backing_service", said))
    return out


def near_miss(a: str, b: str) -> bool:
    """`a` is `b` with one character added, dropped, changed, or two neighbours swapped (and longer than 3)."""
    if a == b or min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1:
        return False
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return (
        a[i + 1 :] == b[i + 1 :]
        or a[i:] == b[i + 1 :]
        or a[i + 1 :] == b[i:]
        or a[i + 2 :] == b[i + 2 :]
        and (a[i : i + 2] == b[i : i + 2][::-1])
    )


def _project(ctx: RunContext, failure: IntegrationFailure) -> Project:
    ports, units = unit_ports(ctx), ctx.units.ids()
    held = frozenset(ports)
    hosts = {u.lower() for u in units}
    hosts |= {(urlsplit(e.url).hostname or "").lower() for _l, e in ctx.trace if e.unit_id in units}
    for doc in ctx.sdd_docs:  # what the SDD assigns to a unit: the port its section says it listens on, its aliases
        for block in sdd_blocks(doc.rel, doc.text, units):
            said = _LISTENS.search(block.text)
            if block.unit and said:
                ports.setdefault(int(said.group(1)), block.unit)
                hosts |= {h.lower() for h in _HOST.findall(block.text)}
            for m in _URL.finditer(block.text):
                if m.group(1).lower() in hosts:
                    ports.setdefault(int(m.group(2)), m.group(1))
    sent = [failure.request.model_dump(mode="json") if failure.request else None]
    sent += [[e.url, e.request_body] for _l, e in ctx.trace if e.case == failure.case]
    echo = json.dumps([failure.expected.model_dump(mode="json"), failure.got.model_dump(mode="json"),
                       failure.description, sent], ensure_ascii=False).lower()  # fmt: skip
    return Project(ports, held, frozenset(hosts - {""}), _local_modules(ctx), echo)


def unit_ports(ctx: RunContext) -> dict[int, str]:
    """port → unit_id for every port the trace shows a unit serving, or a unit's own log line says it listens on."""
    out: dict[int, str] = {}
    for _line, entry in ctx.trace:
        port = _port_of_url(entry.url)
        if port is not None and entry.unit_id:
            out.setdefault(port, entry.unit_id)
    for v in voiced_log(ctx):
        m = _LISTENING.search(v.line.text)
        if m and v.voice == "unit" and v.speaker:
            out.setdefault(int(m.group(1)), v.speaker)
    return out


def _port(m: re.Match[str]) -> int:
    return int(next(g for g in m.groups() if g))


def _foreign(text: str, project: Project) -> bool:
    """The text reports a failed connection, and every address it names belongs to no unit."""
    if not PATTERNS["connection_failed"].search(text):
        return False
    found = [_port(m) for m in _ADDRESS.finditer(without_frames(text))]
    return bool(found) and not any(project.owns_port(p) for p in found)


def _startup_noise(voiced, i: int) -> bool:
    """A retried connection at start-up ("waiting for X ... attempt 2/30") that later succeeded is not a failure."""
    text = voiced[i].line.text
    if not _RETRY_NOISE.search(text):
        return False
    target = re.search(r"waiting for ([\w.-]+)", text, re.IGNORECASE)
    name = target.group(1) if target else None
    return any(_READY.search(x.line.text) and (name is None or name in x.line.text) for x in voiced[i + 1 :])


def _local_modules(ctx: RunContext) -> set[str]:
    """Top-level names the project's own code can be imported as (folders and modules of unit code)."""
    return {part.rsplit(".", 1)[0] for files in ctx.code.values() for src in files for part in src.rel.split("/")}


def _port_of_url(url: str) -> int | None:
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
