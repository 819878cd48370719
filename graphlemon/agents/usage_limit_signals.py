"""Recognise Claude plan usage limits in Claude Code output (REQ-14).

Claude Code reports a plan limit in three ways, all handled here:

* a `rate_limit_event` whose `rate_limit_info.status` is `rejected`, with
  `rateLimitType` (five_hour, seven_day, seven_day_opus, ...) and `resetsAt` (epoch s);
* a user-facing message, seen in the result text or a synthetic assistant turn:
  "You've hit your session limit · resets 3pm (America/New_York)",
  "You've hit your weekly limit · resets Jul 31, 2am (UTC)",
  "You've hit your Opus limit · resets ...", "You've hit your limit · resets 11pm (...)",
  "Opus weekly limit reached ∙ resets Oct 31, 9am", "5-hour limit reached · resets 2am (...)";
* the older "Claude AI usage limit reached|1760004000" (reset as epoch seconds).

`resets_at` is parsed when the message carries it (a clock time is the next such
time in the named zone; a date without a year is this year, or next year if it
has passed), else None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import QuotaExceeded

RATE_LIMIT_TYPES = {
    "five_hour": "session",
    "session": "session",
    "seven_day": "weekly",
    "weekly": "weekly",
    "seven_day_sonnet": "weekly",
    "seven_day_opus": "opus",
    "opus": "opus",
}
_HIT = re.compile(r"you(?:'|’)?ve hit your (?:(?P<kind>[\w-]+) )?limit", re.I)
_REACHED = re.compile(
    r"(?P<kind>opus weekly|opus|weekly|session|5-hour|five-hour|daily)?\s*(?:usage )?limit reached", re.I
)
_LEGACY = re.compile(r"claude ai usage limit reached\|(?P<epoch>\d{9,11})", re.I)
_RESETS = re.compile(
    r"resets\s+(?:at\s+)?(?P<when>[^()\n/]+?)\s*(?:\((?P<tz>[A-Za-z_]+(?:/[A-Za-z_+\-]+)*)\))?(?:\s*[·∙.]|\s*$|\n)",
    re.I,
)
_MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}


@dataclass(frozen=True)
class QuotaHit:
    limit_type: str  # session | weekly | opus
    resets_at: datetime | None
    message: str

    def error(self) -> QuotaExceeded:
        return QuotaExceeded(self.limit_type, self.resets_at, f"Claude Code usage limit: {self.message.strip()[:300]}")


def from_rate_limit_event(event: dict[str, Any]) -> QuotaHit | None:
    info = event.get("rate_limit_info") or {}
    if str(info.get("status", "")).lower() not in ("rejected", "denied"):
        return None
    limit_type = RATE_LIMIT_TYPES.get(str(info.get("rateLimitType", "")).lower(), "session")
    resets = info.get("resetsAt")
    resets_at = datetime.fromtimestamp(int(resets), UTC) if isinstance(resets, int | float) else None
    return QuotaHit(limit_type, resets_at, f"rate_limit_event rejected ({info.get('rateLimitType', 'unknown')})")


def merge_quota(event: QuotaHit | None, text: QuotaHit | None) -> QuotaHit | None:
    """The event knows the limit type and reset time best; the message reads best."""
    if event is None or text is None:
        return event or text
    return QuotaHit(event.limit_type, event.resets_at or text.resets_at, text.message)


def parse_usage_limit(text: str, now: datetime | None = None) -> QuotaHit | None:
    """A plan usage-limit message in `text`, or None."""
    if not text:
        return None
    now = now or datetime.now(UTC)
    legacy = _LEGACY.search(text)
    if legacy:
        return QuotaHit("session", datetime.fromtimestamp(int(legacy.group("epoch")), UTC), legacy.group(0))
    m = _HIT.search(text) or _REACHED.search(text)
    if m is None or (m.re is _REACHED and not m.group("kind") and "usage limit" not in m.group(0).lower()):
        return None
    kind = (m.group("kind") or "").lower()
    limit_type = "opus" if "opus" in kind else "weekly" if "week" in kind else "session"
    line = text[m.start() :].splitlines()[0]
    return QuotaHit(limit_type, _resets_at(line, now), line)


def _resets_at(line: str, now: datetime) -> datetime | None:
    m = _RESETS.search(line + "\n")
    if m is None:
        return None
    tz = _zone(m.group("tz"))
    when = m.group("when").strip().rstrip(",").lower()
    local_now = now.astimezone(tz)
    date_part, time_part = _split_when(when)
    clock = _clock(time_part) if time_part else (0, 0)
    if clock is None:
        return None
    if date_part is None:
        candidate = local_now.replace(hour=clock[0], minute=clock[1], second=0, microsecond=0)
        if candidate <= local_now:
            candidate += timedelta(days=1)
        return candidate.astimezone(UTC)
    month, day = date_part
    try:
        candidate = local_now.replace(month=month, day=day, hour=clock[0], minute=clock[1], second=0, microsecond=0)
    except ValueError:
        return None
    if candidate < local_now - timedelta(days=1):
        candidate = candidate.replace(year=candidate.year + 1)
    return candidate.astimezone(UTC)


def _split_when(when: str) -> tuple[tuple[int, int] | None, str | None]:
    """'jul 31, 2am' / 'jul 27 at 4:30am' / 'oct 24' / '3pm' -> ((month, day) | None, time text | None)."""
    m = re.match(r"^(?P<mon>[a-z]{3})[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?(?:,|\s+at)?\s*(?P<rest>.*)$", when)
    if m and m.group("mon") in _MONTHS:
        return (_MONTHS[m.group("mon")], int(m.group("day"))), (m.group("rest").strip() or None)
    return None, when


def _clock(text: str) -> tuple[int, int] | None:
    m = re.match(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$", text.strip())
    if m is None:
        return None
    hour, minute, ampm = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    if ampm == "pm" and hour != 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    return (hour, minute) if hour < 24 and minute < 60 else None


def _zone(name: str | None):
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC
