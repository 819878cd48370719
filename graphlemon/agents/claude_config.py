"""A claude_code turn's own Claude Code config folder: made for the turn, judged and thrown away after it.

The person's own config (`$CLAUDE_CONFIG_DIR`, else `~/.claude` and `~/.claude.json`) is never shown to the sandbox.
Each turn gets a fresh folder (`$CLAUDE_CONFIG_DIR` inside) holding a read-only copy of the login
(`CREDENTIAL_FILES`) and nothing else; whatever else Claude Code keeps there during the turn (sessions, todos,
caches) is scratch. After the turn the folder is compared with what it was given, and every entry that would steer
a later Claude Code — a hook, an MCP server, a slash command, a subagent, a skill, a plugin, an output style, a
settings file, a CLAUDE.md (`steering_kind`) — is a finding, recorded as a violation of the turn; then the folder
is removed, so nothing of it reaches the person's own config.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import beneath
from ..errors import GraphLemonError

CREDENTIAL_FILES = (".credentials.json",)  # Claude Code's login on Linux
STEERING_FOLDERS = {"hooks": "hook", "commands": "slash_command", "agents": "subagent", "skills": "skill",
                    "plugins": "plugin", "output-styles": "output_style", "rules": "memory"}  # fmt: skip
STEERING_FILES = {"settings.json": "settings", "settings.local.json": "settings", ".mcp.json": "mcp_server",
                  "CLAUDE.md": "memory", "CLAUDE.local.md": "memory"}  # fmt: skip
STATE_FILE = ".claude.json"  # Claude Code's own state: rewritten every run; only its MCP servers steer
STATE_LIMIT = 4 * 1024 * 1024  # the most of the state file read back
SCAN_LIMIT = 20000  # entries looked at after a turn


@dataclass(frozen=True)
class ConfigFinding:
    kind: str  # hook | mcp_server | slash_command | subagent | skill | plugin | output_style | settings | memory
    path: str  # relative to the folder
    change: str  # added | changed | removed


@dataclass
class TurnConfig:
    """`with TurnConfig.for_turn(os.environ) as config:` ... `config.folder` ... `config.findings()`."""

    folder: Path
    given: dict[str, str] = field(default_factory=dict)  # relative path -> digest, as the turn got it

    @classmethod
    def for_turn(cls, env: Mapping[str, str]) -> TurnConfig:
        folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-claude-{os.getpid()}-"))
        source = person_config_dir(env)
        for name in CREDENTIAL_FILES:
            origin = source / name
            if origin.is_file() and not origin.is_symlink():
                shutil.copyfile(origin, folder / name)
                (folder / name).chmod(0o444)
        config = cls(folder)
        config.given = config._snapshot()
        return config

    def __enter__(self) -> TurnConfig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def discard(self) -> None:
        for root, dirs, files in os.walk(self.folder):  # a read-only copy or folder must not stop the removal
            for name in dirs + files:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)
        shutil.rmtree(self.folder, ignore_errors=True)

    def findings(self) -> list[ConfigFinding]:
        """Every steering entry the turn added, changed or removed (the state file: only its MCP servers)."""
        now = self._snapshot()
        out = []
        for rel in sorted(set(now) | set(self.given)):
            before, after = self.given.get(rel), now.get(rel)
            if before == after:
                continue
            kind = steering_kind(rel)
            if kind is None:
                continue
            change = "added" if before is None else "removed" if after is None else "changed"
            out.append(ConfigFinding(kind, rel, change))
        servers = self._state_servers()
        if servers:
            out.append(ConfigFinding("mcp_server", f"{STATE_FILE}: {', '.join(servers[:10])}", "added"))
        return out

    def _snapshot(self) -> dict[str, str]:
        """Relative path -> digest of every entry (links by their target, never followed), bounded."""
        out: dict[str, str] = {}
        for root, dirs, files in os.walk(self.folder):
            for name in dirs + files:
                if len(out) >= SCAN_LIMIT:
                    return out
                path = Path(root, name)
                rel = str(path.relative_to(self.folder))
                st = path.lstat()
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = "link:" + os.readlink(path)
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = "dir"
                elif stat.S_ISREG(st.st_mode):
                    out[rel] = f"file:{st.st_size}:{st.st_mtime_ns}:{_digest(self.folder, rel)}"
                else:
                    out[rel] = f"other:{stat.S_IFMT(st.st_mode)}"
        return out

    def _state_servers(self) -> list[str]:
        """The MCP servers the turn put in Claude Code's state file (top level or under a project)."""
        data = _read_json(self.folder, STATE_FILE)
        if not isinstance(data, dict):
            return []
        found = list(data.get("mcpServers") or {}) if isinstance(data.get("mcpServers"), dict) else []
        projects = data.get("projects")
        for project in projects.values() if isinstance(projects, dict) else ():
            servers = project.get("mcpServers") if isinstance(project, dict) else None
            found += list(servers) if isinstance(servers, dict) else []
        return [str(name)[:100] for name in found]


def steering_kind(rel: str) -> str | None:
    """What a path in the config folder would steer in a later Claude Code, or None (scratch)."""
    parts = Path(rel).parts
    if not parts:
        return None
    if parts[0] in STEERING_FOLDERS:
        return STEERING_FOLDERS[parts[0]]
    if parts[-1] in ("CLAUDE.md", "CLAUDE.local.md"):
        return "memory"  # wherever it is
    if len(parts) == 1 and parts[0] in STEERING_FILES:
        return STEERING_FILES[parts[0]]
    if len(parts) == 1 and parts[0] in CREDENTIAL_FILES:
        return "settings"  # the login is given read-only; a change of it is a change of who Claude Code is
    return None


def person_config_dir(env: Mapping[str, str]) -> Path:
    """The person's own Claude Code config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    named = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(named) if named else Path(env.get("HOME") or Path.home()) / ".claude"


def _digest(folder: Path, rel: str) -> str:
    """The sha256 of a regular file the turn wrote, read through the safe reader (no link, no FIFO)."""
    h = hashlib.sha256()
    try:
        with beneath.open_regular(folder, rel) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except (OSError, GraphLemonError):
        return "unreadable"
    return h.hexdigest()


def _read_json(folder: Path, rel: str) -> object:
    """The JSON of a regular file the turn wrote, through the safe reader (bounded); None when it is none of that."""
    try:
        return json.loads(beneath.read_bytes(folder, rel, max_bytes=STATE_LIMIT))
    except (OSError, ValueError, GraphLemonError):
        return None
