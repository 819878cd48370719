"""The child's environment.

A confined run (agent-written code) gets an allow-list: PATH, the locale (LANG, LANGUAGE,
LC_*), TZ, TERM, the toolchains' locations (GOPATH, CARGO_HOME, ...), a private HOME and
TMPDIR (set by the sandbox), plus the names the project declares (`settings.sandbox.env`);
Python writes no bytecode caches into the work tree.
Nothing else of GraphLemon's environment reaches it: no token, no database URL, whatever
its name. An unconfined run (the user's own `graphlemon test`) inherits the environment
minus secret-named variables. Both: colours off, the caller's additions laid on top.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ..redact import is_secret_name  # the one definition of a secret's name
from .confine import TOOL_HOME_VARS, Confined, Confinement

__all__ = ["child_env", "confined_env", "is_secret_name", "run_env"]

ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", *TOOL_HOME_VARS)
ALLOWED_PREFIXES = ("LC_",)


def child_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) without secrets, with `extra` laid on top.

    Entries in `extra` are the caller's deliberate choice and are kept as given.
    """
    source = os.environ if base is None else base
    return _finish({k: v for k, v in source.items() if not is_secret_name(k)}, extra)


def confined_env(
    extra: Mapping[str, str] | None = None, declared: Iterable[str] = (), base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Only the allowed and `declared` names of `base`, with `extra` laid on top."""
    source = os.environ if base is None else base
    wanted = set(ALLOWED) | set(declared)
    kept = {k: v for k, v in source.items() if k in wanted or k.startswith(ALLOWED_PREFIXES)}
    kept["PYTHONDONTWRITEBYTECODE"] = "1"  # no bytecode caches beside the code: the effect check would judge them
    return _finish(kept, extra)


def run_env(extra: Mapping[str, str], conf: Confinement | None, confined: Confined) -> dict[str, str]:
    """The environment of a run as it is confined (`confined`, from `confine.wrap`)."""
    if conf is not None and confined == "bwrap":
        return confined_env(extra, conf.settings.env)
    return child_env(extra)


def _finish(env: dict[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env
