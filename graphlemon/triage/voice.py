"""Who said it, and when: every piece of run evidence carries its voice and its time relative to the failing step.

The voice is read from structure — which file, stream, field or stack frame the text came from — never from
the words themselves (docs/triage.md, "Voices"):

- `fixture`  what the case itself states: result.json's `expected`, `description`, `request`;
- `unit`     a unit's own output: its answer (`got.status/body/value`, a trace entry's status and body when
             the entry's `unit_id` is a unit), a process.log line tagged with the unit's id, and any exception
             whose stack runs through one of the unit's source files (its exception and message, whatever
             library raised it underneath, and whatever text it echoes);
- `runner`   the integration runner: its assertion message and a stack that runs through no unit's file, and
             process.log lines tagged `runner` / `integrator` / `integration` / `harness` / `ci`, or written
             between the Integrator's `$ command` line and its `exit code` line;
- `os`       the operating system: the transport error of a call (`got.error`, a trace entry's `error`: what
             the kernel told the caller about a connection) and process.log lines tagged `kernel`;
- `service`  something outside the project: a process.log line in brackets or `name |` form whose name is no
             unit's (a database, a broker, an orchestrator), and a trace entry served by no unit;
- `sdd`      the design (an SDD statement a finding cites);
- `unknown`  a line without a tag: nobody can say who wrote it.

A word in a unit's voice is evidence about that unit, never about the environment. The time is `before`, `at` or
`after` the failing step (a log line's timestamp against the failure's `ts`; a trace entry's step against the
failing step), `unknown` when neither says.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from .run_context import LogLine, RunContext
from .rundir import IntegrationFailure

Voice = Literal["fixture", "unit", "runner", "os", "service", "sdd", "unknown"]
When = Literal["before", "at", "after", "unknown", "quoted"]  # quoted: a line about an earlier run
RUNNER_TAGS = frozenset({"runner", "integrator", "integration", "harness", "ci"})
OS_TAGS = frozenset({"kernel"})

_TS = r"\[?(?P<ts>\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?"
# `[name] text` (any name), `name | text` (compose style), `name: text` or `name  text` (only a known name)
_TAGGED = re.compile(rf"^\s*(?:{_TS}\s+)?(?:\[(?P<bracket>[\w.@/-]+)\]|(?P<bare>[A-Za-z][\w.-]*)(?P<sep>\s*\||:|\s))")
_RELAYED = re.compile(r"\s*(?:\[([\w.@/-]+)\]|([A-Za-z][\w.]*(?:-[A-Za-z][\w.]*)*)(?:-\d+)?\s*\|)")  # compose: name-1 |
_COMMAND = re.compile(rf"^\s*(?:{_TS}\s+)?\$ ")
_EXIT = re.compile(rf"^\s*(?:{_TS}\s+)?exit code -?\d+")
_STACK_PATH = re.compile(
    r"(?:File \")?((?:[A-Za-z]:)?[\w@.~/\\-]+\.(?:py|js|mjs|cjs|ts|tsx|jsx|go|rs|rb|java|kt|kts|scala|php|cs|swift|exs?|cc|cpp))"
    r"(?:\"?, line |:)(\d+)"
)
_VENDOR = re.compile(r"node_modules|site-packages|dist-packages|node:internal|/usr/lib/|<anonymous>|/lib/python\d")


@dataclass(frozen=True)
class Said:
    """One quote of run evidence: where it is, what it says, who said it and when."""

    rel: str
    line: int | None
    text: str
    voice: Voice
    speaker: str | None  # the unit, service or runner name
    when: When
    side: str | None = None  # for an interface quote: spec, contract, consumer, code or trace

    def where(self) -> str:
        return f"{self.rel}:{self.line}" if self.line else self.rel

    def as_dict(self) -> dict:
        out = {"at": self.where(), "quote": self.text[:300], "voice": self.voice, "speaker": self.speaker,
               "when": self.when}  # fmt: skip
        return {**out, "side": self.side} if self.side else out


def log_ts(text: str) -> datetime | None:
    """A log line's leading timestamp (ISO, or `2026/06/06 18:18:40`), UTC when it names no zone."""
    m = _TAGGED.match(text) or re.match(rf"^\s*{_TS}", text)
    if m is None or not m.group("ts"):
        return None
    raw = m.group("ts").replace(",", ".").replace("Z", "+00:00")
    raw = raw[:10].replace("/", "-") + raw[10:]
    try:
        ts = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def line_speaker(text: str, units: frozenset[str]) -> tuple[Voice, str | None]:
    """The voice of one process.log line, from its tag."""
    m = _TAGGED.match(text)
    if m is None:
        return "unknown", None
    name = m.group("bracket") or m.group("bare")
    known = name in units or name.lower() in RUNNER_TAGS or name.lower() in OS_TAGS
    if m.group("bare") and not known and "|" not in (m.group("sep") or ""):
        return "unknown", None  # `word: text` is a message's own words unless the word names a known speaker
    if name in units:
        return "unit", name
    if name.lower() in RUNNER_TAGS:
        relayed = _RELAYED.match(text, m.end())  # the runner relaying a unit's output: `integrator: booking-1 | …`
        if relayed and (relayed.group(1) or relayed.group(2)) in units:
            return "unit", relayed.group(1) or relayed.group(2)
        return "runner", name
    if name.lower() in OS_TAGS:
        return "os", name
    return "service", name


@dataclass(frozen=True)
class VoicedLine:
    line: LogLine
    voice: Voice
    speaker: str | None


def voiced_log(ctx: RunContext) -> list[VoicedLine]:
    """process.log, each line with its voice. Lines between the Integrator's `$ command` and `exit code` lines are
    the runner's output; a stack trace among them that runs through a unit's file is that unit's (a block of
    lines of one speaker holding a unit's frame is the unit's exception)."""
    units = frozenset(ctx.units.ids())
    out: list[VoicedLine] = []
    in_command = False
    for line in ctx.log:
        voice, speaker = line_speaker(line.text, units)
        if _COMMAND.match(line.text):  # the Integrator's own lines around the command's output
            in_command, voice, speaker = True, "runner", "integrator"
        elif _EXIT.match(line.text):
            in_command, voice, speaker = False, "runner", "integrator"
        elif in_command and voice == "unknown":
            voice, speaker = "runner", "runner"
        out.append(VoicedLine(line, voice, speaker))
    return _own_exceptions(ctx, out)


def _own_exceptions(ctx: RunContext, lines: list[VoicedLine]) -> list[VoicedLine]:
    """Re-voice as the unit's the blocks (consecutive non-blank lines of one speaker) that hold a frame of a unit's
    file: a stack trace through the unit's code is the unit's exception, whoever printed it."""
    out = list(lines)
    start = 0
    for i in range(1, len(lines) + 1):
        same = i < len(lines) and (lines[i].voice, lines[i].speaker) == (lines[start].voice, lines[start].speaker)
        if same and not _blank(lines[i].line.text) and not _blank(lines[i - 1].line.text):
            continue
        if lines[start].voice != "unit":
            owners = units_in_text(ctx, "\n".join(x.line.text for x in lines[start:i]))
            if owners:
                out[start:i] = [VoicedLine(x.line, "unit", owners[0]) for x in lines[start:i]]
        start = i
    return out


def _blank(text: str) -> bool:
    """A line with nothing after its timestamp (the Integrator stamps empty lines too)."""
    return not re.sub(rf"^\s*{_TS}", "", text).strip()


def when_at(ts: datetime | None, failure: IntegrationFailure) -> When:
    if ts is None or failure.ts is None:
        return "unknown"
    failed = failure.ts if failure.ts.tzinfo else failure.ts.replace(tzinfo=UTC)
    return "before" if ts < failed else "at" if ts == failed else "after"


def log_times(lines: list[VoicedLine], failure: IntegrationFailure) -> list[When]:
    """Each line's time against the failing step, by its timestamp and by order: a line after the runner's line that
    reports the failing case failed is `after`, even in the same second; a line that dates what it reports earlier
    than the failure's day (a rerun plugin's history, a flaky-test report) is `quoted`, not a report of this run."""
    out: list[When] = []
    failed = False
    day = failure.ts.date() if failure.ts else None
    for v in lines:
        when = when_at(log_ts(v.line.text), failure)
        body = re.sub(rf"^\s*{_TS}", "", v.line.text)
        if day is not None and any(d < day.isoformat() for d in re.findall(r"\b(\d{4}-\d{2}-\d{2})\b", body)):
            when = "quoted"
        elif failed and when == "at":
            when = "after"
        out.append(when)
        reports = v.voice == "runner" and failure.case in v.line.text and re.search(r"\bfail", body, re.I)
        failed = failed or bool(reports)
    return out


def when_of_step(step: int, failure: IntegrationFailure) -> When:
    return "before" if step < failure.step else "at" if step == failure.step else "after"


def stack_voice(ctx: RunContext, text: str) -> tuple[Voice, str | None]:
    """A stack trace's voice: the unit whose file it runs through (its exception), else the runner's."""
    owners = units_in_text(ctx, text)
    return ("unit", owners[0]) if owners else ("runner", "runner")


def failure_said(ctx: RunContext, failure: IntegrationFailure) -> list[Said]:
    """The failing step's own texts with their voices: the transport error, the answer, the message and stack."""
    rel = f"{ctx.run_rel}/result.json"
    serving = failure.involves[0] if len(failure.involves) == 1 else None
    stack_v, stack_who = stack_voice(ctx, f"{failure.message}\n{failure.stack}")
    out = []
    if failure.got.error:
        out.append(Said(rel, None, failure.got.error, "os", None, "at"))
    if isinstance(failure.got.body, str) and failure.got.body:
        out.append(Said(rel, None, failure.got.body, "unit", serving, "at"))
    for text in (failure.message, failure.stack):
        if text:
            out.append(Said(rel, None, text, stack_v, stack_who, "at"))
    return out


# -- stack frames: which unit's code a trace runs through ---------------------------------------------------


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
