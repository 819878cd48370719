"""The child's environment.

A confined run (agent-written code) gets an allow-list: PATH, the locale (LANG, LANGUAGE,
LC_*), TZ, TERM, the toolchains' locations (GOPATH, CARGO_HOME, ...), a private HOME and
TMPDIR (set by the sandbox), plus the names the project declares (`settings.sandbox.env`);
Python writes no bytecode caches into the work tree.
Nothing else of GraphLemon's environment reaches it: no token, no database URL, whatever
its name. An agent's own confined process (Claude Code) gets the same allow-list plus the
variables it reads (`AGENT_PROCESS_*`) and those of the cloud provider the person chose for it
(`PROVIDER_PREFIXES`: `AWS_*` only with CLAUDE_CODE_USE_BEDROCK, `GOOGLE_*` / `VERTEX_*` / `CLOUD_ML_*` only
with CLAUDE_CODE_USE_VERTEX, `OTEL_*` only with CLAUDE_CODE_ENABLE_TELEMETRY): its key reaches it, and so its Bash, but no other secret of GraphLemon's
environment; its proxy variables name the egress proxy's bridge (`egress_env`), whatever the person's were. An unconfined run (the user's own `graphlemon test`) inherits the environment
minus secret-named variables. Both: colours off, the caller's additions laid on top.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ..redact import is_secret_name  # the one definition of a secret's name
from .confine import TOOL_HOME_VARS, Confined, Confinement

__all__ = ["agent_process_env", "child_env", "confined_env", "egress_env", "is_secret_name", "run_env"]
LOOPBACK_NAMES = "localhost,127.0.0.1,::1"

ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", *TOOL_HOME_VARS)
ALLOWED_PREFIXES = ("LC_",)
# what Claude Code reads (docs.anthropic.com, Claude Code settings: environment variables) and its providers' (Bedrock,
# Vertex), its proxies and certificates, the shell its Bash tool starts
AGENT_PROCESS_NAMES = (
    "SHELL", "USER", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "USE_BUILTIN_RIPGREP",
)  # fmt: skip
AGENT_PROCESS_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "DISABLE_", "BASH_", "MCP_", "MAX_")
# a cloud provider's variables (its keys among them) reach Claude Code only when the person chose that provider
# (Claude Code's own switches): a person's AWS or Google login is no business of a turn that talks to the API
PROVIDER_PREFIXES = {
    "CLAUDE_CODE_USE_BEDROCK": ("AWS_",),
    "CLAUDE_CODE_USE_VERTEX": ("VERTEX_", "CLOUD_ML_", "GOOGLE_"),
    "CLAUDE_CODE_ENABLE_TELEMETRY": ("OTEL_",),  # an exporter's headers may carry a token
}


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


def agent_process_env(declared: Iterable[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an agent's own confined process: `confined_env` plus what the agent program reads."""
    source = os.environ if base is None else base
    prefixes = [
        *AGENT_PROCESS_PREFIXES,
        *(p for switch, ps in PROVIDER_PREFIXES.items() if _on(source, switch) for p in ps),
    ]
    names = [k for k in source if k in AGENT_PROCESS_NAMES or k.startswith(tuple(prefixes))]
    return confined_env(declared=[*declared, *names], base=source)


def _on(source: Mapping[str, str], switch: str) -> bool:
    """A Claude Code switch set the way it reads one (`1`, `true`)."""
    return source.get(switch, "").strip().lower() in ("1", "true", "yes", "on")


def egress_env(port: int) -> dict[str, str]:
    """The proxy variables of a sandbox whose only way out is the egress proxy (its bridge on `port` inside); the
    sandbox's own loopback is reached directly."""
    url = f"http://127.0.0.1:{port}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    return {**dict.fromkeys(names, url), "NO_PROXY": LOOPBACK_NAMES, "no_proxy": LOOPBACK_NAMES}


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
