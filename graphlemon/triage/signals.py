"""Signals that are not in the SDD: environment errors in logs and traces, crashes, which unit a stack names.

Environment failures are read by kind (docs/triage.md, "Environment failures are read by kind"): every errno the
operating system reports for the machine rather than for the calling program, a process ended by a signal sent
from outside it, a dependency saying it cannot serve yet, a failed TLS handshake, a clock out of step, a registry
refusing a download, a crashed runner, and the named kinds before them (EADDRINUSE, ENOSPC, EAI_AGAIN, a
health-check timeout, a kill, ETIMEDOUT, exhausted memory or ports, a gRPC UNAVAILABLE, a database starting up,
SIGBUS, a checksum mismatch, a missing *package*), each in any runtime's spelling (oserrors.py). Where a line
appears decides too: words the case expects are the answer under test; a unit's answer below 500 is its answer.
ECONNREFUSED / socket hang up only count on the failing step itself, and a "waiting for X: ECONNREFUSED
(attempt 2/30)" line followed by X becoming healthy is start-up noise. A process that died at start-up on its own
code (a missing *local* module, a SyntaxError) is a code crash, not an environment problem.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from .oserrors import PATTERNS, SENT_SIGNALS, SHARED_LIBRARY_MISSING, signal_death
from .run_context import LOG_WINDOW, LogLine, RunContext, parse_log_ts
from .rundir import IntegrationFailure

InfraKind = Literal[
    "port_in_use", "disk_full", "dns", "health_check", "killed", "timeout", "missing_dependency", "unreachable",
    "out_of_resources", "connection_refused", "connection_reset", "backing_service", "certificate_expired",
    "clock_stepped", "external_service", "address_unavailable", "rpc_unavailable", "database_starting", "bus_error",
    "checksum_mismatch", "tls", "dependency_unavailable", "os_error", "signaled", "runner_crashed", "download_failed",
]  # fmt: skip

def _death(*kinds: str) -> Callable[[str], bool]:
    """A process that ended by a signal of this kind (oserrors.signal_death): SIGKILL is `killed`, SIGBUS is
    `bus_error`, a signal sent from outside the process (SIGTERM, SIGXCPU, ...) is `signaled`."""

    def died(text: str) -> bool:
        sig = signal_death(text)
        if sig is None:
            return False
        kind = {"SIGKILL": "killed", "SIGBUS": "bus_error"}.get(sig.name, "signaled" if sig.name in SENT_SIGNALS else "")
        return kind in kinds

    return died


# A package manager or container runtime fetching what the run needs (a package, a module, an artifact, an image)
# and the registry or mirror answering that it cannot serve now: throttled or its own gateway failing.
_FETCHING = re.compile(
    r"\b(?:npm|yarn|pnpm|pip|poetry|uv|cargo|gem|bundler?|maven|mvn|gradle|nuget|composer|apt(?:-get)?|apk|"
    r"docker|podman|containerd|image|crates?|artifact|wheel|package|registry|mirror|pull(?:ing)?)\b|\bgo(?: mod)?:",
    re.IGNORECASE,
)
_REGISTRY_BUSY = re.compile(
    r"(?<![\d.:/-])(?:429|50[0234])(?![\d.:/-])|Service Unavailable|Bad Gateway|Gateway Time-?out|Too Many Requests|"
    r"toomanyrequests|rate[- ]limit(?:ed)?",
    re.IGNORECASE,
)


def _busy_codes(text: str) -> set[int]:
    return {int(m.group(0)) for m in _REGISTRY_BUSY.finditer(text) if m.group(0).isdigit()}


def _download_failed(text: str) -> bool:
    return bool(_FETCHING.search(text) and _REGISTRY_BUSY.search(text))


def _any(*tests: Callable[[str], object]) -> Callable[[str], bool]:
    return lambda text: any(t(text) for t in tests)


# (kind, test, strong, start-up class: counts wherever it is in the log). The operating system's failures are
# spelled as every runtime names them (oserrors.py); the rest are the integration environment's own words.
_INFRA: tuple[tuple[InfraKind, Callable[[str], object], bool, bool], ...] = (
    ("port_in_use", PATTERNS["port_in_use"].search, True, True),
    ("disk_full", PATTERNS["disk_full"].search, True, False),
    ("dns", PATTERNS["dns"].search, True, False),
    ("health_check", re.compile(r"health[- ]?check (?:timeout|timed out|failed)|did not become healthy|(?:readiness|liveness|startup) probe failed|"
            r"CrashLoopBackOff|ImagePullBackOff|ErrImagePull|no healthy upstream", re.I).search, True, True),
    ("killed", _any(PATTERNS["killed"].search, _death("killed")), True, True),
    ("timeout", PATTERNS["timeout"].search, True, False),
    ("missing_dependency", re.compile(rf"Cannot find module '(?![./])[^']+'|No module named '[^']+'|{SHARED_LIBRARY_MISSING}", re.I).search, True, True),
    ("unreachable", PATTERNS["unreachable"].search, True, False),
    ("out_of_resources", PATTERNS["out_of_resources"].search, True, False),
    ("certificate_expired", PATTERNS["certificate_expired"].search, True, False),
    ("clock_stepped", PATTERNS["clock_stepped"].search, True, True),
    ("address_unavailable", PATTERNS["address_unavailable"].search, True, False),
    ("rpc_unavailable", PATTERNS["rpc_unavailable"].search, True, False),
    ("database_starting", PATTERNS["database_starting"].search, True, False),
    ("bus_error", _any(PATTERNS["bus_error"].search, _death("bus_error")), True, True),
    ("checksum_mismatch", PATTERNS["checksum_mismatch"].search, True, False),
    ("tls", PATTERNS["tls"].search, True, False),
    ("os_error", PATTERNS["os_error"].search, True, False),
    ("signaled", _death("signaled"), True, False),
    ("dependency_unavailable", PATTERNS["dependency_unavailable"].search, True, False),
    ("download_failed", _download_failed, True, False),
    ("runner_crashed", PATTERNS["runner_crashed"].search, True, False),
    ("connection_refused", PATTERNS["connection_refused"].search, False, False),
    ("connection_reset", PATTERNS["connection_reset"].search, False, False),
)  # fmt: skip
# Kinds whose words also describe a domain's own states ("not ready", "restarting", a worker that crashed): they count
# only where a dependency or the harness speaks (a log line of no unit: the runner, a database, a broker, a sidecar)
# or as the failing call's transport error, never in an assertion's message or a unit's own log line.
_OUTSIDE_VOICE = frozenset({"dependency_unavailable", "runner_crashed"})
# Kinds read only up to the failure: a process stopped after the step failed is the run being torn down.
_BEFORE_FAILURE = frozenset({"signaled"})
# Kinds of the run's set-up (installs, image pulls): they count at any earlier time when the failing step got no
# answer at all (what was not installed never started), and near the failure's time otherwise.
_SET_UP = frozenset({"download_failed"})

_RETRY_NOISE = re.compile(r"waiting for|attempt \d+\s*/\s*\d+|retrying|retry \d+", re.IGNORECASE)
_READY = re.compile(r"healthy|ready|listening|running on|startup complete|started", re.IGNORECASE)
_EXITED = re.compile(
    r"exited with code [1-9]|exited before|exit(?:ed)? code [1-9]|process exited|crashed", re.IGNORECASE
)
_CODE_CRASH = re.compile(
    r"Cannot find module '\.{1,2}/[^']+'|SyntaxError:|ReferenceError:|IndentationError:|NameError:|ImportError: cannot import name"
)
_STACK_PATH = re.compile(r"(?:File \")?((?:[A-Za-z]:)?[\w@.~/\\-]+\.(?:py|js|mjs|cjs|ts|tsx|jsx|go|rs|rb|java|kt|kts|scala|php|cs|swift|exs?|cc|cpp))(?:\"?, line |:)(\d+)")
_VENDOR = re.compile(r"node_modules|site-packages|dist-packages|node:internal|/usr/lib/|<anonymous>|/lib/python\d")


@dataclass(frozen=True)
class Signal:
    kind: InfraKind
    strong: bool
    rel: str  # file that shows it
    line: int | None
    text: str  # the line (or value) that shows it, verbatim
    on_failing_step: bool
    unit_id: str | None = None  # the unit whose trace entry or log line shows it


@dataclass(frozen=True)
class Crash:
    """A unit's process died at start-up because of its own code."""

    unit_id: str | None
    rel: str
    line: int
    text: str


# An error states itself at the head of a text (a message, Java's stack) or at its tail (Python's stack, the last
# lines a process printed); the middle of a huge answer body or stack is not read (its cost grows with its size).
_HEAD_AND_TAIL = 8192


def _head_and_tail(text: str) -> str:
    return f"{text[:_HEAD_AND_TAIL]}\n{text[-_HEAD_AND_TAIL:]}" if len(text) > 2 * _HEAD_AND_TAIL else text


def match_infra(text: str) -> tuple[InfraKind, bool] | None:
    """The first environment kind the text reports (a missing module may be the unit's own: callers check)."""
    text = _head_and_tail(text)
    for kind, test, strong, _startup in _INFRA:
        if test(text):
            return kind, strong
    return None


def infra_signals(ctx: RunContext, failure: IntegrationFailure, local_modules: set[str]) -> list[Signal]:
    """Environment signals that bear on this failure, strongest first.

    Where a line appears decides whether it reports the environment: the failing call's transport error, the
    runner's or a dependency's log line near the failure's time, a unit's answer that is itself a failure (a 5xx,
    no answer). Not: words the case *expected* to see (a test of the unit's own "certificate has expired"
    answer), a unit's normal answer (below 500: the unit served the call), a process stopped after the failure."""
    out: list[Signal] = []
    result_rel = f"{ctx.run_rel}/result.json"
    trace_rel = f"{ctx.run_rel}/http-trace.ndjson"
    expected = _expected_kinds(failure)
    for value in (failure.got.error, failure.stack, failure.message):
        hit = match_infra(value or "")
        if not hit or _is_local_module(value or "", local_modules) or hit[0] in expected:
            continue
        if hit[0] in _OUTSIDE_VOICE and value is not failure.got.error:
            continue
        out.append(Signal(hit[0], hit[1], result_rel, None, value or "", True))
    crashed = runner_crash(ctx)
    if crashed is not None:
        out.append(crashed)
    for lineno, entry in ctx.trace:
        if entry.case != failure.case or entry.step != failure.step:
            continue
        served = entry.status is not None and entry.status < 500 and not entry.error
        for value in (entry.error, None if served else _text(entry.response_body)):
            hit = match_infra(value or "")
            if hit and hit[0] not in expected and (hit[0] not in _OUTSIDE_VOICE or value is entry.error):
                out.append(Signal(hit[0], hit[1], trace_rel, lineno, value or "", True, entry.unit_id))
    log_rel = f"{ctx.run_rel}/process.log"
    answered = {e.status for _n, e in ctx.trace if e.case == failure.case} | {failure.got.status}
    for i, line in enumerate(ctx.log):
        hit = match_infra(line.text)
        if not hit or _is_local_module(line.text, local_modules):
            continue
        kind, strong = hit
        startup = next(s for k, _t, _st, s in _INFRA if k == kind)
        set_up = kind in _SET_UP and failure.got.error is not None and _before(line, failure.ts)
        if not (startup or set_up) and not in_window(line, failure.ts):
            continue
        if kind in _BEFORE_FAILURE and not _before(line, failure.ts):
            continue
        if kind in _OUTSIDE_VOICE and units_in_prefix(ctx, line.text):
            continue
        if kind in _SET_UP and _busy_codes(line.text) & answered:
            continue  # the status a unit of the project answered in this case: its answer, not a registry's
        if startup_noise(ctx.log, i):
            continue
        if not strong and not _about_failing_step(line.text, failure):
            continue
        unit = (units_in_prefix(ctx, line.text) or units_in_text(ctx, line.text) or [None])[0]
        out.append(Signal(kind, strong, log_rel, line.lineno, line.text, False, unit))
    return sorted(out, key=lambda s: (not s.strong, not s.on_failing_step))


def runner_crash(ctx: RunContext) -> Signal | None:
    """The integration runner itself died (`crashed` in result.json): the harness failed, not a unit. Cited as the
    file spells it, on its line."""
    if not ctx.result.crashed:
        return None
    try:
        text = (ctx.run_dir / "result.json").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    m = re.search(r'"crashed"\s*:\s*true', text)
    line = text.count("\n", 0, m.start()) + 1 if m and "\n" not in m.group(0) else None
    quote = m.group(0) if line is not None else '"crashed": true'
    return Signal("runner_crashed", True, f"{ctx.run_rel}/result.json", line, quote, True)


def _expected_kinds(failure: IntegrationFailure) -> set[str]:
    """Environment kinds the case's own expectation speaks of: its words are the answer under test, not a report."""
    said = json.dumps(failure.expected.model_dump(mode="json"), ensure_ascii=False) + "\n" + (failure.description or "")
    return {kind for kind, test, _st, _su in _INFRA if test(_head_and_tail(said))}


def _before(line: LogLine, failed_at: datetime | None) -> bool:
    ts = parse_log_ts(line.text)
    return failed_at is None or ts is None or ts <= failed_at


def startup_crash(ctx: RunContext, local_modules: set[str]) -> Crash | None:
    """A process that exited at start-up on an error in the project's own code."""
    if not any(_EXITED.search(line.text) for line in ctx.log):
        return None
    for i, line in enumerate(ctx.log):
        local_import = "No module named" in line.text and _is_local_module(line.text, local_modules)
        if not (_CODE_CRASH.search(line.text) or local_import):
            continue
        window = " ".join(x.text for x in ctx.log[max(0, i - 3) : i + 12])
        units = units_in_text(ctx, window) or units_in_prefix(ctx, line.text)
        return Crash(units[0] if units else None, f"{ctx.run_rel}/process.log", line.lineno, line.text)
    return None


def stack_frames(text: str) -> list[tuple[str, int]]:
    """(path, line) of each non-vendor frame in a stack trace or log text."""
    out = []
    for m in _STACK_PATH.finditer(text or ""):
        if not _VENDOR.search(m.group(1)):
            out.append((m.group(1).replace("\\", "/"), int(m.group(2))))
    return out


def without_frames(text: str) -> str:
    """The text with its stack frames' `file.py:16` blanked: a source line is not a host:port."""
    return _STACK_PATH.sub(" ", text)


def unit_of_path(ctx: RunContext, path: str) -> tuple[str, str] | None:
    """(unit_id, project-relative file) for a path seen at run time (`/srv/app/bff/x.js` → web-bff, bff/x.js)."""
    path = path.replace("\\", "/")
    best: tuple[int, str, str] | None = None
    for unit_id, files in ctx.code.items():
        for src in files:
            parts = src.rel.split("/")
            for k in range(len(parts), 0, -1):
                suffix = "/".join(parts[-k:])
                if (path == suffix or path.endswith("/" + suffix)) and (k >= 2 or path == suffix):
                    if best is None or k > best[0]:
                        best = (k, unit_id, src.rel)
                    break
    return (best[1], best[2]) if best else _declared_file(ctx, path)


def _declared_file(ctx: RunContext, path: str) -> tuple[str, str] | None:
    """A frame in a file the triager does not parse (Go, Rust): the longest tail of its path (two parts at least)
    that is a file of the project under a unit's declared code path."""
    parts = [p for p in path.split("/") if p]
    if ".." in parts:
        return None  # a frame never names a file outside the project
    for k in range(len(parts), 1, -1):
        rel = "/".join(parts[-k:])
        for unit in ctx.units.units:
            under = any(rel == c.rstrip("/") or rel.startswith(c.rstrip("/") + "/") for c in unit.code if "*" not in c)
            if under and (ctx.root / rel).is_file() and Path(os.path.realpath(ctx.root / rel)).is_relative_to(ctx.root):
                return unit.unit_id, rel  # a file of the project, not one a symlink leads out to
    return None


def units_in_text(ctx: RunContext, text: str) -> list[str]:
    units: list[str] = []
    for path, _line in stack_frames(text):
        hit = unit_of_path(ctx, path)
        if hit and hit[0] not in units:
            units.append(hit[0])
    return units


def units_in_prefix(ctx: RunContext, line: str) -> list[str]:
    m = re.match(r"^\s*(?:\S+\s+)?\[?([A-Za-z0-9][\w.-]*)\]?\s*[|:]?\s", line)
    ids = set(ctx.units.ids())
    return [m.group(1)] if m and m.group(1) in ids else []


def local_module_names(ctx: RunContext) -> set[str]:
    """Top-level names the project's own code can be imported as (folders and modules of unit code)."""
    names = set()
    for files in ctx.code.values():
        for src in files:
            for part in src.rel.split("/"):
                names.add(part.rsplit(".", 1)[0])
    return names


def _is_local_module(text: str, local: set[str]) -> bool:
    m = re.search(r"No module named '([\w.]+)'", text)
    return bool(m and m.group(1).split(".")[0] in local)


def startup_noise(log: list[LogLine], i: int) -> bool:
    """A retried connection at start-up ("waiting for X ... attempt 2/30") that later succeeded is not a failure."""
    return bool(_RETRY_NOISE.search(log[i].text)) and _recovered(log[i + 1 :], log[i].text)


def in_window(line: LogLine, failed_at: datetime | None) -> bool:
    ts = parse_log_ts(line.text)
    return failed_at is None or ts is None or abs(ts - failed_at) <= LOG_WINDOW * 2


def _recovered(later: list[LogLine], noise: str) -> bool:
    target = re.search(r"waiting for ([\w.-]+)", noise, re.IGNORECASE)
    name = target.group(1) if target else None
    return any(_READY.search(x.text) and (name is None or name in x.text) for x in later)


def _about_failing_step(text: str, failure: IntegrationFailure) -> bool:
    """A weak signal counts when the log line names the failing case, or the failing request got no response."""
    return failure.case in text or failure.got.error is not None


def _text(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)
