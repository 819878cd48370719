"""What a confined run is shown of the toolchains: binaries and libraries, never a home's folders whole.

An allow-list, not a deny-list: a folder under the home is shown as what a toolchain needs of it —
a PATH entry as itself (`~/.local/bin`, never `~/.local`), the folder its links point into, an interpreter's
prefix, and for the toolchain homes whose layout is known only the parts a build reads (`~/.cargo`: `bin`,
`registry`, `git`, not `credentials.toml` or `config.toml`; `~/.rustup`: `toolchains`, `settings.toml`; `~/go`:
`bin`, `pkg`; pyenv, nvm, rbenv likewise). The home itself and its secret stores (`~/.config`, `~/.ssh`, ...) are
never shown, whatever PATH names. Folders outside the home (`/opt/node`, a venv, GOROOT) are install prefixes and
are shown whole.

A second line behind the allow-list: a credential file or folder by name (`CREDENTIAL_NAMES`: `.npmrc`,
`.pypirc`, `.netrc`, `credentials.toml`, `.docker`, `gh`, `keyrings`, ...) found at the top two levels of a shown
folder under the home is covered (an empty file or folder in its place). `graphlemon doctor sandbox` looks for
such names from inside.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # graphlemon's own plugins and reporters
TOOL_HOMES = ("go", ".cargo", ".rustup")  # looked for in every home
TOOL_HOME_VARS = ("GOPATH", "GOMODCACHE", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "VIRTUAL_ENV")
# what each toolchain home's build reads; anything else in it (credentials, config with tokens) stays out
LAYOUTS: dict[str, tuple[str, ...]] = {
    ".cargo": ("bin", "registry", "git"),
    ".rustup": ("toolchains", "settings.toml"),
    "go": ("bin", "pkg"),
    ".pyenv": ("bin", "libexec", "plugins", "shims", "versions", "version"),
    ".nvm": ("versions", "nvm.sh", "nvm-exec", "alias"),
    ".rbenv": ("bin", "libexec", "shims", "versions", "version", "rbenv.d"),
}
# the environment variables that name such a home (GOPATH is a `go` home, CARGO_HOME a `.cargo` one)
HOME_VAR_LAYOUTS = {"GOPATH": "go", "CARGO_HOME": ".cargo", "RUSTUP_HOME": ".rustup"}
# folders of a home that hold secrets: never shown, even when PATH names them
SECRET_STORES = frozenset({".config", ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
                           ".local", ".cache", ".mozilla", ".pki", ".gcloud", ".netrc", ".npmrc", ".pypirc"})  # fmt: skip
CREDENTIAL_NAMES = frozenset({
    ".npmrc", ".pypirc", ".netrc", ".git-credentials", ".pgpass", ".docker", ".ssh", ".gnupg", ".aws", ".kube",
    "credentials", "credentials.toml", "credentials.json", ".credentials.json", "hosts.yml", "gh", "keyrings",
    ".password-store", "auth.json", "id_rsa", "id_ed25519", "id_ecdsa",
})  # fmt: skip
SCAN_BUDGET = 4000  # entries looked at per shown folder for credential names


def tool_mounts(home: Path, env: Mapping[str, str]) -> tuple[list[Path], list[Path]]:
    """(folders and files to show read-only, credential entries inside them to cover)."""
    shown, covered = _cached(str(home), env.get("PATH", ""), tuple(env.get(n, "") for n in TOOL_HOME_VARS))
    return [Path(p) for p in shown], [Path(p) for p in covered]


@lru_cache(maxsize=16)
def _cached(home: str, path: str, home_vars: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    home_dir = Path(home)
    entries = [Path(p) for p in path.split(os.pathsep) if p]
    wanted: list[Path] = []
    for p in [*entries, *_link_targets(entries)]:
        wanted += _needs(Path(os.path.realpath(p)), home_dir, None) if p.is_absolute() else []
    prefixes = [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parents[1], PACKAGE_DIR]
    for p in prefixes:
        wanted += _needs(Path(os.path.realpath(p)), home_dir, None)
    for name in TOOL_HOMES:
        wanted += _needs(Path(os.path.realpath(home_dir / name)), home_dir, name)
    for name, value in zip(TOOL_HOME_VARS, home_vars, strict=True):
        if value and Path(value).is_absolute():
            wanted += _needs(Path(os.path.realpath(value)), home_dir, HOME_VAR_LAYOUTS.get(name))
    kept = sorted({p for p in wanted if os.path.lexists(p) and not covered_by_usr(p)})
    shown = [p for p in kept if not any(q in p.parents for q in kept)]  # one mount per tree
    covered = [c for p in shown if _under(p, home_dir) for c in _credentials_in(p)]
    return tuple(str(p) for p in shown), tuple(str(p) for p in covered)


def allowed_parts(path: Path, home: Path) -> list[Path]:
    """What may be shown of `path` (a program's folder): itself, a known toolchain home's allowed parts, or nothing
    (the home, a secret store)."""
    return _needs(path, home, None)


def _needs(path: Path, home: Path, layout: str | None) -> list[Path]:
    """What to show for `path`: the allowed parts of a toolchain home (named by `layout`, or a known one `path` is
    in), the path itself elsewhere; nothing for the home, a secret store or anything in one."""
    if not path.is_absolute() or not os.path.lexists(path):
        return []
    if layout is not None:
        return [path / part for part in LAYOUTS[layout]]
    if path == home or path in home.parents:
        return []  # the home itself (or a folder holding it): never shown whole
    if not _under(path, home):
        return [path]  # an install prefix outside the home
    parts = path.relative_to(home).parts
    if parts[0] in SECRET_STORES and not _allowed_in_store(parts):
        return []
    if parts[0] in LAYOUTS:
        return [home / parts[0] / part for part in LAYOUTS[parts[0]]]
    return [path]


def _allowed_in_store(parts: tuple[str, ...]) -> bool:
    """`~/.local/bin` and `~/.local/share/<tool>/...` (a program's install) may be shown; `~/.local` whole never,
    nor what `~/.local/share` keeps of secrets (keyrings)."""
    if parts[0] != ".local" or len(parts) < 2:
        return False
    return parts[1] == "bin" or (parts[1] in ("share", "lib") and len(parts) >= 3 and parts[2] not in CREDENTIAL_NAMES)


def _credentials_in(folder: Path) -> list[Path]:
    """Entries named like credentials at the top two levels of `folder` (bounded)."""
    found, seen = [], 0
    level = [folder]
    for _depth in range(2):
        below = []
        for current in level:
            try:
                names = sorted(os.scandir(current), key=lambda e: e.name)
            except OSError:
                continue
            for entry in names:
                seen += 1
                if seen > SCAN_BUDGET:
                    return found
                if entry.name in CREDENTIAL_NAMES:
                    found.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    below.append(Path(entry.path))
        level = below
    return found


def _link_targets(entries: list[Path]) -> list[Path]:
    """The prefixes that the links in PATH folders point into (`/usr/local/bin/node` -> `/opt/node/bin/node`:
    `/opt/node`)."""
    out: set[Path] = set()
    for folder in entries:
        try:
            names = list(os.scandir(folder))
        except OSError:
            continue
        for entry in names:
            if not entry.is_symlink():
                continue
            target = Path(os.path.realpath(entry.path)).parent
            out.add(target.parent if target.name == "bin" else target)
    return sorted(out)


def _under(path: Path, home: Path) -> bool:
    return home != Path("/") and home in path.parents


def covered_by_usr(path: Path) -> bool:
    """Under `/usr` (mounted whole) or the root itself (never mounted)."""
    return path == Path("/") or path == Path("/usr") or Path("/usr") in path.parents
