"""What a confined run is shown of the toolchains: binaries and libraries, never a home's folders whole.

An allow-list, not a deny-list: a folder under the home is shown as what a toolchain needs of it —
a PATH entry as itself (`~/.local/bin`, never `~/.local`); an install prefix under the home (the prefix a PATH
link points into, GOROOT, JAVA_HOME, VIRTUAL_ENV, an interpreter's prefix) only as its install parts
(`PREFIX_PARTS`: `bin`, `lib`, `include`, `share`, `src`, `pkg`, ...; never its `etc/`, a `pip.conf`, a `misc/`
or a `secrets/` beside them); and for the toolchain homes whose layout is known only the parts a build reads
(`~/.cargo`: `bin`, `registry` (index, cache, sources), `git/checkouts`, not `git/db` (clones whose config holds
the remote's URL), `credentials.toml` or `config.toml`; `~/.rustup`: its toolchains' install parts,
`settings.toml`; `~/go`: `bin`, `pkg/mod` without `cache/vcs`; pyenv, nvm, rbenv: their scripts and each version's
install parts). The home itself and its secret stores (`~/.config`, `~/.ssh`, ...) are never shown, whatever PATH
names. Folders outside the home (`/opt/node`, a venv, GOROOT) are install prefixes and are shown whole.

A second line behind the allow-list: an entry named like a credential (`credential_name`: `.npmrc`, `.pypirc`,
`.netrc`, `pip.conf`, `credentials.toml`, `.docker`, `gh`, `keyrings`, a hidden name with `token`, `secret`,
`credential`, `passw`, ...) found at the top two levels of any shown folder is covered (an empty file or folder
in its place). `graphlemon doctor sandbox` looks for such names from inside.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # graphlemon's own plugins and reporters
TOOL_HOMES = ("go", ".cargo", ".rustup")  # looked for in every home
TOOL_HOME_VARS = ("GOPATH", "GOMODCACHE", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "VIRTUAL_ENV")
# the parts of an install prefix a build reads (`bin`, libraries, headers, a Go tree's `src` and `pkg`, a JDK's
# `conf` and `jmods`, a venv's `pyvenv.cfg`): what else a prefix under the home holds stays out
PREFIX_PARTS = (
    "bin", "sbin", "lib", "lib64", "libexec", "include", "share", "src", "pkg", "conf", "jmods", "pyvenv.cfg",
    "go.env", "VERSION", "release",
)  # fmt: skip
# what each toolchain home's build reads; anything else in it (credentials, config with tokens) stays out. A `*`
# names every folder there; a part ending in `/` is an install prefix (its PREFIX_PARTS)
LAYOUTS: dict[str, tuple[str, ...]] = {
    ".cargo": ("bin", "registry/index", "registry/cache", "registry/src", "git/checkouts"),
    ".rustup": ("toolchains/*/", "settings.toml"),
    "go": ("bin", "pkg/mod"),
    ".pyenv": ("bin", "libexec", "plugins", "shims", "versions/*/", "version"),
    ".nvm": ("versions/*/*/", "nvm.sh", "nvm-exec", "alias"),
    ".rbenv": ("bin", "libexec", "shims", "versions/*/", "version", "rbenv.d"),
}
# inside a shown part, what a build never reads and a fetch keeps credentials in: covered by an empty folder
LAYOUT_HOLES: dict[str, tuple[str, ...]] = {"go": ("pkg/mod/cache/vcs",)}
# the environment variables that name such a home (GOPATH is a `go` home, CARGO_HOME a `.cargo` one)
HOME_VAR_LAYOUTS = {"GOPATH": "go", "CARGO_HOME": ".cargo", "RUSTUP_HOME": ".rustup"}
# folders of a home that hold secrets: never shown, even when PATH names them
SECRET_STORES = frozenset({".config", ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
                           ".local", ".cache", ".mozilla", ".pki", ".gcloud", ".netrc", ".npmrc", ".pypirc"})  # fmt: skip
CREDENTIAL_NAMES = frozenset({
    ".npmrc", ".pypirc", ".netrc", ".git-credentials", ".pgpass", ".docker", ".ssh", ".gnupg", ".aws", ".kube",
    "credentials", "credentials.toml", "credentials.json", ".credentials.json", "hosts.yml", "gh", "keyrings",
    ".password-store", "auth.json", "id_rsa", "id_ed25519", "id_ecdsa", "npmrc", "pip.conf", "pip.ini", ".env",
    "_netrc", ".yarnrc", ".yarnrc.yml", ".gem", ".m2", "settings-security.xml", ".vault-token",
})  # fmt: skip
# a hidden entry (a dot file) whose name holds one of these (lower case) is a credential's too (`.cargo-index-token`,
# `.vault-token`); a library's module (`token.py`, `secrets.py`) is not hidden
CREDENTIAL_WORDS = ("token", "secret", "credential", "passw", "apikey", "api_key", "private")
SCAN_BUDGET = 4000  # entries looked at per shown folder for credential names


def tool_mounts(home: Path, env: Mapping[str, str]) -> tuple[list[Path], list[Path]]:
    """(folders and files to show read-only, credential entries inside them to cover)."""
    shown, covered = _cached(str(home), env.get("PATH", ""), tuple(env.get(n, "") for n in TOOL_HOME_VARS))
    return [Path(p) for p in shown], [Path(p) for p in covered]


def credentials_in(folders: Iterable[Path]) -> list[Path]:
    """The credential-named entries at the top two levels of `folders` (shown read-only): to be covered."""
    return [c for p in folders if os.path.isdir(p) for c in _credentials_in(Path(os.path.realpath(p)))]


@lru_cache(maxsize=16)
def _cached(home: str, path: str, home_vars: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    home_dir = Path(home)
    entries = [Path(p) for p in path.split(os.pathsep) if p]
    wanted: list[Part] = []
    for p in entries:  # a folder of programs: itself
        wanted += _needs(Path(os.path.realpath(p)), home_dir, None) if p.is_absolute() else []
    prefixes = [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parents[1]]
    for p in [*_link_targets(entries), *prefixes]:  # install prefixes
        wanted += _needs(Path(os.path.realpath(p)), home_dir, None, prefix=True)
    wanted += _needs(PACKAGE_DIR, home_dir, None)
    for name in TOOL_HOMES:
        wanted += _needs(Path(os.path.realpath(home_dir / name)), home_dir, name)
    for name, value in zip(TOOL_HOME_VARS, home_vars, strict=True):
        if value and Path(value).is_absolute():
            layout = HOME_VAR_LAYOUTS.get(name)
            wanted += _needs(Path(os.path.realpath(value)), home_dir, layout, prefix=layout is None)
    covers: dict[Path, list[Path]] = {}
    for part in wanted:  # a path wanted twice (a PATH entry that is also a prefix) keeps every cover
        covers.setdefault(part.path, []).extend(part.covers)
    kept = sorted({p.path for p in wanted if os.path.lexists(p.path) and not covered_by_usr(p.path)})
    shown = [p for p in kept if not any(q in p.parents for q in kept)]  # one mount per tree
    holes = [p for p in _holes(home_dir, home_vars) if any(q in p.parents for q in shown)]
    extras = [e for p in shown for e in covers.get(p, ())]
    covered = list(dict.fromkeys([*holes, *extras, *(c for p in shown for c in _credentials_in(p))]))
    covered = [c for c in covered if not any(q in c.parents for q in covered)]  # one cover per tree
    return tuple(str(p) for p in shown), tuple(str(p) for p in covered)


@dataclass(frozen=True)
class Part:
    """A folder or file to show, and what in it is covered: for an install prefix under the home, its entries
    beside its install parts (one mount for the prefix and one per such entry, not one per part)."""

    path: Path
    covers: tuple[Path, ...] = ()


def allowed_parts(path: Path, home: Path) -> list[Path]:
    """What may be shown of `path` (a program's folder): itself, a known toolchain home's allowed parts, or nothing
    (the home, a secret store)."""
    return [p.path for p in _needs(path, home, None)]


def _needs(path: Path, home: Path, layout: str | None, *, prefix: bool = False) -> list[Part]:
    """What to show for `path`: the allowed parts of a toolchain home (named by `layout`, or a known one `path` is
    in), an install prefix under the home (`prefix`: shown as its install parts), the path itself elsewhere; nothing
    for the home, a secret store or anything in one."""
    if not path.is_absolute() or not os.path.lexists(path):
        return []
    if layout is not None:
        return _layout_parts(path, LAYOUTS[layout])
    if path == home or path in home.parents:
        return []  # the home itself (or a folder holding it): never shown whole
    if not _under(path, home):
        return [Part(path)]  # an install prefix outside the home
    parts = path.relative_to(home).parts
    if parts[0] in SECRET_STORES and not _allowed_in_store(parts):
        return []
    if parts[0] in LAYOUTS:
        return _layout_parts(home / parts[0], LAYOUTS[parts[0]])
    return [Part(path, tuple(_beside_install_parts(path)) if prefix else ())]


def _layout_parts(root: Path, layout: tuple[str, ...]) -> list[Part]:
    """`layout`'s parts under `root`. A part with `*` (every folder there) ending in `/` names install prefixes:
    the folder before the first `*` is shown whole (one mount), and covered in it is every entry of a `*` level
    that is not a folder and, in each prefix, every entry beside its install parts."""
    out: list[Part] = []
    for part in layout:
        steps = [p for p in part.rstrip("/").split("/") if p not in ("", ".")]
        if "*" not in steps:
            out.append(Part(root.joinpath(*steps)))
            continue
        star = steps.index("*")
        base = root.joinpath(*steps[:star])
        covers: list[Path] = []
        level = [base]
        for step in steps[star:]:
            if step != "*":
                level = [p / step for p in level]
                continue
            found = [e for p in level for e in _scan(p) if not e.is_symlink()]
            covers += [Path(e.path) for e in found if not e.is_dir(follow_symlinks=False)]
            level = [Path(e.path) for e in found if e.is_dir(follow_symlinks=False)]
        if part.endswith("/"):
            covers += [c for prefix in level for c in _beside_install_parts(prefix)]
        out.append(Part(base, tuple(covers)))
    return out


def _beside_install_parts(prefix: Path) -> list[Path]:
    """The entries at the top of an install prefix that are not its install parts (`PREFIX_PARTS`): a `pip.conf`, an
    `etc/`, a `secrets/`. A link there shows nothing of its own (its target is shown only if allowed): left alone."""
    return [Path(e.path) for e in _scan(prefix) if e.name not in PREFIX_PARTS and not e.is_symlink()]


def _scan(folder: Path) -> list[os.DirEntry]:
    try:
        return sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []


def _holes(home: Path, home_vars: tuple[str, ...]) -> list[Path]:
    """The LAYOUT_HOLES of every toolchain home this run may be shown (an empty folder over each)."""
    roots = [(home / name, name) for name in TOOL_HOMES]
    roots += [(Path(v), HOME_VAR_LAYOUTS[n]) for n, v in zip(TOOL_HOME_VARS, home_vars, strict=True)
              if v and n in HOME_VAR_LAYOUTS and Path(v).is_absolute()]  # fmt: skip
    return [Path(os.path.realpath(r)) / hole for r, name in roots for hole in LAYOUT_HOLES.get(name, ())
            if os.path.isdir(Path(r) / hole)]  # fmt: skip


def credential_name(name: str) -> bool:
    """Whether an entry's name says it holds a credential (`CREDENTIAL_NAMES`, or a hidden one with a
    `CREDENTIAL_WORDS` word in it)."""
    lowered = name.lower()
    if lowered in CREDENTIAL_NAMES:
        return True
    return lowered.startswith(".") and any(word in lowered for word in CREDENTIAL_WORDS)


def _allowed_in_store(parts: tuple[str, ...]) -> bool:
    """`~/.local/bin` and `~/.local/share/<tool>/...` (a program's install) may be shown; `~/.local` whole never,
    nor what `~/.local/share` keeps of secrets (keyrings)."""
    if parts[0] != ".local" or len(parts) < 2:
        return False
    return parts[1] == "bin" or (parts[1] in ("share", "lib") and len(parts) >= 3 and not credential_name(parts[2]))


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
                if credential_name(entry.name):
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
