"""The agents' redactor is the one in `graphlemon.redact` (ledger, logs, artifacts and transcripts share it)."""

from ..redact import MASK, Redactor

__all__ = ["MASK", "Redactor"]
