"""HTTP status mentions: `status_mentions(text)` finds status codes written as numbers ("404") or in their reason
phrases ("not found", "conflict")."""

from __future__ import annotations

import re
from dataclasses import dataclass

KNOWN_STATUSES = frozenset(
    {200, 201, 202, 204, 301, 302, 303, 304, 307, 308, 400, 401, 402, 403, 404, 405, 406, 408, 409, 410, 412,
     413, 415, 422, 423, 425, 428, 429, 500, 501, 502, 503, 504}
)  # fmt: skip

# Status codes written in words: their reason phrases (RFC 9110's and the older names). One-word phrases that are
# ordinary words too ("created", "ok", "gone", "accepted") are left out, and so are "too early", "not modified".
STATUS_PHRASES: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), code)
    for p, code in (
        (r"\bnot[ _]found\b", 404),
        (r"\bunauthori[sz]ed\b|\bunauthenticated\b|\bnot authenticated\b", 401),
        (r"\bforbidden\b|\bpermission denied\b", 403),
        (r"\bconflict\b", 409),
        (r"\bbad request\b", 400),
        (r"\bunprocessable\b", 422),
        (r"\btoo many requests\b|\brate[- ]limited\b", 429),
        (r"\bno content\b", 204),
        (r"\bpayment required\b", 402),
        (r"\bpayload too large\b|\bcontent too large\b|\brequest entity too large\b", 413),
        (r"\bmethod not allowed\b", 405),
        (r"\bnot acceptable\b", 406),
        (r"\bprecondition failed\b", 412),
        (r"\bprecondition required\b", 428),
        (r"\bunsupported media type\b", 415),
        (r"\binternal server error\b", 500),
        (r"\bbad gateway\b", 502),
        (r"\bservice unavailable\b", 503),
        (r"\bgateway timeout\b", 504),
    )
)
_NUMERIC_STATUS = re.compile(
    r"(?<![\w.$])([1-5]\d\d)(?![\w%+]|\.\d)(?!\s*(?:ms|s|px|cents?|mb|kb|gb|chars?|characters|bytes|queries|"
    r"seconds?|minutes?|hours?|days?|per|points?|times)\b)",
    re.IGNORECASE,
)


# A status a sentence denies: "the 201 in §3's table is wrong", "no longer 404", "200, not 204".
_DENIED_AFTER = re.compile(r"[^.;:\n]{0,60}?\b(?:is|are|was|were)\s+(?:now\s+)?(?:wrong|incorrect|obsolete|outdated|"
                           r"superseded|withdrawn|a mistake|an error)\b", re.IGNORECASE)  # fmt: skip
_DENIED_BEFORE = re.compile(r"\b(?:not|never|no longer|instead of|rather than|replaces?|replacing)\W+(?:\w+\W+)?$",
                            re.IGNORECASE)  # fmt: skip


def denied(text: str, start: int, end: int) -> bool:
    """The status written at text[start:end] is one the sentence denies rather than states."""
    return bool(_DENIED_AFTER.match(text, end) or _DENIED_BEFORE.search(text[max(0, start - 40) : start]))


@dataclass(frozen=True)
class StatusMention:
    code: int
    prose: bool  # written in words ("not found") rather than as a number
    start: int


def status_mentions(text: str) -> list[StatusMention]:
    """HTTP status codes mentioned in `text`, numerically or in words, in order of appearance."""
    found: dict[int, StatusMention] = {}
    for m in _NUMERIC_STATUS.finditer(text):
        code = int(m.group(1))
        if code in KNOWN_STATUSES and code not in found:
            found[code] = StatusMention(code, False, m.start())
    for pattern, code in STATUS_PHRASES:
        m = pattern.search(text)
        if m and code not in found:
            found[code] = StatusMention(code, True, m.start())
    return sorted(found.values(), key=lambda s: s.start)
