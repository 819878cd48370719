"""Keep secrets out of the ledger, logs and transcripts.

A `Redactor` knows the secret values in play (the API key) and also masks
anything shaped like an Anthropic key or an auth header, wherever text or JSON
leaves the process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "[REDACTED]"
_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(x-api-key|authorization|api[_-]?key)(\"?\s*[:=]\s*\"?)(Bearer\s+)?[A-Za-z0-9_\-\.]{8,}"),
)


class Redactor:
    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, MASK)
        value = _PATTERNS[0].sub(MASK, value)
        return _PATTERNS[1].sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", value)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
