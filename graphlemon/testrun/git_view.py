"""The repository's git config as a confined run is shown it: a copy holding only sections that never carry a
secret (`SHOWN_SECTIONS`: core, extensions, index, user, diff, merge, branch, ...), bound read-only over the git
dir's `config` inside the sandbox.

A person's `.git/config` may hold a token: a remote's URL with a password (`https://me:TOKEN@host/repo`), an
`http.extraHeader` with a bearer token, a credential helper's settings, a submodule's or LFS's URL. Git inside the
sandbox (an agent's `git status`, `git log`, `git diff`) needs the repository's format and its work-tree settings,
none of those: `remote`, `url`, `http`, `credential`, `submodule`, `lfs`, `include`, `includeIf`, `alias`,
`sendemail` and every section not on the list are left out. The copy is made with git's own parser
(`git config --file F --no-includes --list -z`, which runs nothing) and cached while the file is unchanged.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

from .. import git_config
from ..errors import GraphLemonError

SHOWN_SECTIONS = frozenset({
    "core", "extensions", "index", "feature", "user", "author", "committer", "i18n", "status", "diff", "merge",
    "log", "init", "branch", "pack", "gc", "advice", "color", "pull", "rebase", "fetch", "worktree", "format",
})  # fmt: skip


class _Views:
    lock = threading.Lock()
    folder: Path | None = None
    made: dict[str, tuple[tuple[int, int, int], Path]] = {}


def scrubbed_config(config: Path) -> Path | None:
    """A copy of the git config file `config` with only SHOWN_SECTIONS (None when there is no such file or git
    cannot read it: the caller then shows an empty file instead)."""
    try:
        st = os.stat(config)
    except OSError:
        return None
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    key = str(config)
    with _Views.lock:
        made = _Views.made.get(key)
        if made is not None and made[0] == stamp and made[1].is_file():
            return made[1]
        entries = _entries(config)
        if entries is None:
            return None
        target = _folder() / f"config-{len(_Views.made)}"
        target.write_text(render(entries), encoding="utf-8", errors="surrogateescape")
        target.chmod(0o444)
        _Views.made[key] = (stamp, target)
        return target


def _folder() -> Path:
    if _Views.folder is None:
        _Views.folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-gitview-{os.getpid()}-"))
        _Views.folder.chmod(0o755)
        atexit.register(shutil.rmtree, _Views.folder, True)
    return _Views.folder


def _entries(config: Path) -> list[tuple[str, str | None]] | None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
    try:
        return git_config.entries(str(config), env)
    except GraphLemonError:
        return None


def render(entries: list[tuple[str, str | None]]) -> str:
    """The entries whose section is shown, written back as a git config file (values quoted and escaped)."""
    lines: list[str] = []
    current = None
    for key, value in entries:
        section, _, rest = key.partition(".")
        if section.lower() not in SHOWN_SECTIONS or not rest:
            continue
        sub, _, name = rest.rpartition(".")
        header = f"[{section}]" if not sub else f'[{section} "{_escape(sub)}"]'
        if header != current:
            lines.append(header)
            current = header
        lines.append(f"\t{name}" if value is None else f'\t{name} = "{_escape(value)}"')
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
