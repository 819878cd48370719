"""Words for matching a failing case against SDD sentences: terms, concepts, HTTP status mentions.

`terms(text)` lower-cases, maps common phrasings of one idea to one concept token
(`does not exist` / `unknown` / `不存在` → `c:missing`), splits identifiers
(`invalid_quantity` → invalid, quantity), drops stop words and applies a light
stemmer (expired / expires / expire → expir). `status_mentions(text)` finds HTTP
status codes written as numbers ("404") or in words ("not found", "conflict").
"""

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

# One idea, many phrasings. Applied to lower-cased text before tokenising, longest phrases first.
_PHRASE_CONCEPTS: tuple[tuple[str, str], ...] = (
    # Only ideas every API's prose expresses many ways (absence, duplication, expiry, emptiness, refusal,
    # invalidity, creation, deletion); no domain's vocabulary (log-in, a game's rules) and no phrase that
    # one scenario happened to use.
    (r"does(?: not|n't) exist|do(?: not|n't) exist|not exist|non-?existent|no such|unknown|missing|不存在", "c:missing"),
    (r"already (?:registered|exists?|has|taken|in use)|duplicate|\btwice\b", "c:duplicate"),
    (r"expir\w*|过期", "c:expire"),
    (r"\bempty\b|\bblank\b|whitespace|空", "c:empty"),
    (r"\breject\w*|\brefus\w*|\bden(?:y|ied|ies)\b|not allowed|\bdeclin\w*", "c:reject"),
    (r"\binvalid\b|malformed|not valid|\bwrong\b|\bbad\b", "c:invalid"),
    (r"\bcreat\w*|\badd(?:s|ed|ing)?\b|\bnew\b|\bregister\w*|\binsert\w*", "c:create"),
    (r"\bdelet\w*|\bremov\w*", "c:delete"),
)  # fmt: skip
_PHRASES = tuple((re.compile(p), f" {token} ") for p, token in _PHRASE_CONCEPTS)
_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "ten": "10"}

STOPWORDS = frozenset(
    """a an the is are was were be been being to of in on at for with and or but if when then than that this
    these those it its as by from into out up down so such no not can could should must may might will would
    shall do does did done has have had having i you we they he she them our your their there here what which
    who whom whose how why all any each every some other another same also only just very more most less
    one's it's via per e g eg ie etc its get post put patch head options api http https json body status code
    response request endpoint return returns returned respond responds answer answers answered with without
    always never else otherwise once whatever whether while after before until both either
    """.split()
)
_WORD = re.compile(r"c:[a-z]+|[a-z][a-z0-9]*|\d+(?:\.\d+)?")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def stem(word: str) -> str:
    """A deliberately small stemmer: plural and tense endings, a final e."""
    if word.startswith("c:") or not word.isalpha():
        return word
    for suffix, keep in (("ies", 4), ("ing", 5), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) > keep and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def terms(text: str) -> frozenset[str]:
    """The content words of `text` (concepts, identifier parts, stems), without stop words or status phrases."""
    text = _CAMEL.sub(" ", text).lower().replace("_", " ")
    for pattern, _code in STATUS_PHRASES:
        text = pattern.sub(" ", text)
    for pattern, token in _PHRASES:
        text = pattern.sub(token, text)
    text = re.sub(r"[\-./]", " ", text)
    out = set()
    for word in _WORD.findall(text):
        word = _NUMBER_WORDS.get(word, word)
        if (
            word in STOPWORDS
            or (len(word) < 2 and not word.isdigit())
            or (word.isdigit() and int(word) in KNOWN_STATUSES)
        ):
            continue
        out.add(stem(word))
    return frozenset(out)


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


def identifiers(text: str) -> list[str]:
    """Field names of the first `{...}` object in `text` (`{"a": 1, b, c: [..]}` → a, b, c); path params are skipped."""
    start = next((m.start() for m in re.finditer(r"\{", text) if m.start() == 0 or text[m.start() - 1] != "/"), -1)
    if start < 0:
        return []
    depth, items, current = 0, [], []
    for ch in text[start:]:
        if ch in "{[(":
            depth += 1
            if depth == 1:
                continue
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                items.append("".join(current))
                break
        if depth == 1 and ch == ",":
            items.append("".join(current))
            current = []
        elif depth >= 1:
            current.append(ch)
    names = []
    for item in items:
        key = item.split(":", 1)[0].strip().strip("\"'` ")
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            names.append(key)
    return names
