"""The one redactor: keep secrets out of the ledger, logs, artifacts and transcripts.

A `Redactor` masks
* the secret values it is given (an executor's API key),
* every value of a secret-named variable in GraphLemon's own environment (`*_KEY`, `*_TOKEN`,
  `*SECRET*`, `*PASS*`, `*PWD*` (not the shell's PWD / OLDPWD), `*CREDENTIAL*`, ...: the names
  `testrun.environment` strips from an unconfined test's environment), and the password inside
  any variable's URL (`DATABASE_URL=postgres://app:<password>@db/app`),
* anything shaped like a well-known credential (Anthropic, OpenAI, GitHub, AWS, Slack keys; auth headers)
  and the password of any URL (`scheme://user:<password>@host`),

wherever text or JSON leaves the process. The ledger redacts every line it appends and the
writers under `.graphlemon/` go through `write_redacted`, so no caller has to remember to.
GraphLemon redacts what it records, never the repository's content: what an agent writes into
the work tree is written as given.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MASK = "[REDACTED]"
MIN_SECRET_LEN = 8  # shorter values ("1", "true", a port) are not secrets and would mask ordinary text

_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"  # a key starts a word: `task-2026...` is an id, not an `sk-` key
    + "|".join(
        (
            r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic
            r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}",  # OpenAI
            r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained tokens
            r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key ids
            r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
        )
    )
    + ")"
)
_ASSIGNED = re.compile(
    r"(?i)(x-api-key|authorization|api[_-]?key)(\\?\"?\s*[:=]\s*\\?\"?)(Bearer\s+)?[A-Za-z0-9_\-\.]{8,}"
)


# ANTHROPIC_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, MYSQL_PWD, ... (case-insensitive)
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|API_?KEY)$|SECRET|PASS|PWD|CREDENTIAL|PRIVATE_KEY",
    re.IGNORECASE,
)
WORKING_DIRS = frozenset({"PWD", "OLDPWD"})  # the shell's working folders, not passwords
# the password of a URL: scheme://user:<password>@host
_URL_PASSWORD = re.compile(r"(?<=://)([^:/@\s\"'<>]*):([^@/\s\"'<>]+)@")


def is_secret_name(name: str) -> bool:
    """A variable whose value is a secret: kept out of test processes' environments and masked in records."""
    return name.upper() not in WORKING_DIRS and bool(_SECRET_NAME.search(name))


def url_passwords(value: str) -> list[str]:
    """The passwords inside the URLs of `value`."""
    return [m.group(2) for m in _URL_PASSWORD.finditer(value)] if "://" in value else []


# a text without one of these cannot match _SHAPES / _ASSIGNED (a fast first look, most lines have none);
# plain substring tests, not a regex alternation: ~100x faster over a large text (a chatty node's log)
_SHAPE_HINTS = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "xox")
_ASSIGNED_HINTS = ("key", "authorization")
_env_cache: tuple[object, list[str]] = (None, [])


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of secret-named variables in this process's environment (long enough to be secrets).

    Reading os.environ decodes every entry (~0.2 ms): the answer is cached until the environment changes."""
    global _env_cache
    if environ is not None:
        named = [v for k, v in environ.items() if len(v) >= MIN_SECRET_LEN and is_secret_name(k)]
        return named + [p for v in environ.values() for p in url_passwords(v) if len(p) >= 4]
    raw = getattr(os.environ, "_data", None)
    key = tuple(raw.items()) if isinstance(raw, dict) else None
    if key is None or key != _env_cache[0]:
        _env_cache = (key, environment_secrets(dict(os.environ)))
    return _env_cache[1]


class Redactor:
    """Masks known secret values and credential shapes. `use_environment`: also this process's secrets, read at
    each call (a test or a block may set them after the redactor was made)."""

    def __init__(self, secrets: Iterable[str | None] = (), *, use_environment: bool = True) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self.use_environment = use_environment

    def _values(self) -> list[str]:
        if not self.use_environment:
            return self.secrets
        extra = [s for s in environment_secrets() if s not in self.secrets]
        return sorted(self.secrets + extra, key=len, reverse=True) if extra else self.secrets

    def text(self, value: str) -> str:
        """`value` with secrets masked; serialized JSON stays JSON (a secret is also found in its escaped form)."""
        for secret in self._values():
            for form in _forms(secret):
                if form in value:
                    value = value.replace(form, MASK)
        if any(hint in value for hint in _SHAPE_HINTS):
            value = _SHAPES.sub(MASK, value)
        lowered = value.lower()
        if any(hint in lowered for hint in _ASSIGNED_HINTS):
            value = _ASSIGNED.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", value)
        if "://" in value and "@" in value:
            value = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{MASK}@", value)
        return value

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


@functools.lru_cache(maxsize=256)
def _forms(secret: str) -> tuple[str, ...]:
    """A secret as written and as it appears inside a JSON string."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    return (secret,) if escaped == secret else (secret, escaped)


DEFAULT = Redactor()


def redact(text: str) -> str:
    """`text` with every secret masked (the process's environment secrets and the known shapes)."""
    return DEFAULT.text(text)


def write_redacted(path: Path, text: str) -> None:
    """Write text under `.graphlemon/` (a log, a result, an evidence pack) with its secrets masked."""
    path.write_text(redact(text), encoding="utf-8")


def redact_file(path: Path) -> None:
    """Mask secrets in a file a child process wrote (test output), in place; binary bytes are kept."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return
    text = raw.decode("utf-8", errors="surrogateescape")
    clean = redact(text)
    if clean != text:
        path.write_bytes(clean.encode("utf-8", errors="surrogateescape"))


class RedactingLogFilter:
    """A `logging` filter that masks a record's text with a redactor (known secrets and key shapes): for a library
    that logs what GraphLemon sends (the anthropic SDK logs each request's body at DEBUG), since what goes to the
    API is sent as it came and only what is written down is redacted."""

    def __init__(self) -> None:
        self.secrets: set[str] = set()

    def add(self, *secrets: str) -> None:
        self.secrets |= {s for s in secrets if s}

    def filter(self, record: Any) -> bool:
        text = record.getMessage()
        clean = Redactor(self.secrets).text(text)
        if clean != text:
            record.msg, record.args = clean, ()
        return True


_LOG_FILTER = RedactingLogFilter()


def redact_library_logs(logger_names: Iterable[str], secrets: Iterable[str] = ()) -> None:
    """Mask secrets in what these loggers record (installed once per logger; `secrets` are added to it)."""
    import logging

    _LOG_FILTER.add(*secrets)
    for name in logger_names:
        logger = logging.getLogger(name)
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)
