"""The child's environment: inherited minus secrets, colours off, plus the caller's additions."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..redact import is_secret_name  # the one definition of a secret's name

__all__ = ["child_env", "is_secret_name"]


def child_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) without secrets, with `extra` laid on top.

    Entries in `extra` are the caller's deliberate choice and are kept as given.
    """
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not is_secret_name(k)}
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env
