"""The child's environment: inherited minus secrets, colours off, plus the caller's additions."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# ANTHROPIC_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, ... (case-insensitive)
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|KEY|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|API_?KEY)$|SECRET|PRIVATE_KEY",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


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
