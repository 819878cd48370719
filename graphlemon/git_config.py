"""The repository's git config as the loop's git will see it: only keys GraphLemon knows to be inert.

Git always reads a repository's own config (`<common dir>/config`, `<git dir>/config.worktree`) and every file
those include (`include.path`, `includeIf.<condition>.path`). `keys(git_dir, common)` lists every key set in
any of them — each include followed whatever its condition (a superset of what git applies: an `onbranch:`
include that does not apply now may apply after a checkout), read with `git config --file F --no-includes`,
which runs nothing — and `overrides(...)` gives, for every key that is not on the allow-list below, an empty
value of GraphLemon's own (command scope, read last, so it wins wherever the key came from).

So the list need not name the keys that run programs: a filter, textconv or merge driver, fsmonitor, a pager,
an editor, a credential helper, `remote.<name>.uploadpack`, an alias, a key a future git adds — none is on the
allow-list, so each one is emptied (an empty command runs nothing; an empty boolean is false). Keys on the
list run nothing and point git at nothing of anyone's choosing; they keep the repository's values (its format,
identity, remotes, branches, merge and diff style). A key the list lacks whose empty value git cannot parse
makes git fail with GIT_ERROR naming it: safe, and said.

The listing is cached while every file of the include graph is unchanged (size, mtime, inode), so a call costs
a few `stat`s.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import ErrorCode, GraphLemonError

MAX_INCLUDE_DEPTH = 10  # as git's own limit
# whole sections whose keys run nothing and name no program (their paths, if any, are files git only reads)
INERT_SECTIONS = frozenset({
    "include", "includeif", "extensions", "user", "author", "committer", "init", "i18n", "index", "pack", "gc",
    "status", "log", "format", "pretty", "advice", "blame", "grep", "am", "apply", "rebase", "pull", "push",
    "fetch", "transfer", "receive", "protocol", "http", "url", "safe", "feature", "fsck", "reset", "checkout",
    "clone", "rerere", "tag", "commit", "versionsort", "splitindex", "worktree", "branch", "fastimport",
})  # fmt: skip
# single keys of the other sections that run nothing (`section.key` or `section.*.key` for a subsection)
INERT_KEYS = frozenset({
    "core.repositoryformatversion", "core.bare", "core.filemode", "core.logallrefupdates", "core.ignorecase",
    "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf",
    "core.checkroundtripencoding", "core.quotepath", "core.compression", "core.loosecompression",
    "core.bigfilethreshold", "core.abbrev", "core.trustctime", "core.checkstat", "core.splitindex",
    "core.sharedrepository", "core.protectntfs", "core.protecthfs", "core.packedgitlimit",
    "core.packedgitwindowsize", "core.deltabasecachelimit", "core.fsync", "core.fsyncmethod",
    "core.fsyncobjectfiles", "core.preloadindex", "core.multipackindex", "core.commitgraph", "core.sparsecheckout",
    "core.sparsecheckoutcone", "core.warnambiguousrefs", "core.createobject", "core.notesref", "core.commentchar",
    "core.whitespace", "core.filesreflocktimeout", "core.packedrefstimeout", "core.ignorestat",
    "core.prefersymlinkrefs", "core.hidedotfiles", "core.longpaths", "core.maxtreedepth", "core.usereplacerefs",
    "core.restrictinheritedhandles", "core.worktree",
    "remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.mirror", "remote.*.tagopt",
    "remote.*.prune", "remote.*.prunetags", "remote.*.skipdefaultupdate", "remote.*.skipfetchall",
    "remote.*.promisor", "remote.*.partialclonefilter", "remote.pushdefault",
    "merge.conflictstyle", "merge.ff", "merge.log", "merge.renames", "merge.renamelimit", "merge.directoryrenames",
    "merge.stat", "merge.autostash", "merge.verbosity", "merge.defaulttoupstream", "merge.branchdesc",
    "diff.algorithm", "diff.renames", "diff.renamelimit", "diff.context", "diff.interhunkcontext",
    "diff.mnemonicprefix", "diff.noprefix", "diff.relative", "diff.indentheuristic", "diff.suppressblankempty",
    "diff.statgraphwidth", "diff.statnamewidth", "diff.dirstat", "diff.ignoresubmodules", "diff.submodule",
    "diff.wserrorhighlight", "diff.colormoved", "diff.colormovedws", "diff.autorefreshindex",
})  # fmt: skip


def inert(key: str) -> bool:
    """Whether `key` (`section.name` or `section.subsection.name`, as `git config --list` prints it) is on the
    allow-list: its value is kept."""
    section, _, rest = key.partition(".")
    section = section.lower()
    if section in INERT_SECTIONS:
        return True
    sub, _, name = rest.rpartition(".")
    name = name.lower()
    return f"{section}.{name}" in INERT_KEYS if not sub else f"{section}.*.{name}" in INERT_KEYS


@dataclass(frozen=True)
class ConfigFile:
    path: str
    stamp: tuple[int, int, int] | None  # (size, mtime_ns, inode); None: absent


@dataclass(frozen=True)
class Listing:
    files: tuple[ConfigFile, ...]  # every file of the include graph, as it was when read
    keys: tuple[str, ...]  # every key set in them, first seen first


_lock = threading.Lock()
_cache: dict[tuple[str, ...], Listing] = {}


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def roots(git_dir: Path | None, common: Path | None) -> tuple[str, ...]:
    """The repository's own config files git reads (whether they exist yet or not)."""
    found = [str(common / "config")] if common is not None else []
    if git_dir is not None:
        found.append(str(git_dir / "config.worktree"))
    return tuple(dict.fromkeys(found))


def keys(git_dir: Path | None, common: Path | None, env: dict[str, str]) -> tuple[str, ...]:
    """Every key set in the repository's config files and everything they include, cached while unchanged."""
    return _listing(git_dir, common, env).keys


def files(git_dir: Path | None, common: Path | None, env: dict[str, str]) -> tuple[str, ...]:
    """Every file of the repository's config include graph (whether it exists or not), cached while unchanged."""
    return tuple(f.path for f in _listing(git_dir, common, env).files)


def _listing(git_dir: Path | None, common: Path | None, env: dict[str, str]) -> Listing:
    top = roots(git_dir, common)
    if not top:
        return Listing((), ())
    with _lock:
        cached = _cache.get(top)
    if cached is not None and all(_stamp(f.path) == f.stamp for f in cached.files):
        return cached
    listing = _read_graph(top, env)
    with _lock:
        _cache[top] = listing
    return listing


def _read_graph(top: tuple[str, ...], env: dict[str, str]) -> Listing:
    files: list[ConfigFile] = []
    found: dict[str, None] = {}
    seen: set[str] = set()
    queue = [(path, 0) for path in top]
    while queue:
        path, depth = queue.pop(0)
        if path in seen or depth > MAX_INCLUDE_DEPTH:
            continue
        seen.add(path)
        stamp = _stamp(path)
        files.append(ConfigFile(path, stamp))
        if stamp is None or not os.path.isfile(path):
            continue
        for key, value in _entries(path, env):
            found.setdefault(key, None)
            if _is_include(key) and value:
                queue.append((_include_target(path, value, env), depth + 1))
    return Listing(tuple(files), tuple(found))


def _is_include(key: str) -> bool:
    section, _, rest = key.partition(".")
    return section.lower() in ("include", "includeif") and rest.rpartition(".")[2].lower() == "path"


def _include_target(including: str, value: str, env: dict[str, str]) -> str:
    """Where git looks for an included file: `~/` is the home, a relative path is beside the including file."""
    if value.startswith("~/") or value == "~":
        home = env.get("HOME") or os.path.expanduser("~")
        value = os.path.join(home, value[2:])
    if value.startswith("%(prefix)/"):
        value = "/" + value.removeprefix("%(prefix)/")
    return os.path.normpath(value if os.path.isabs(value) else os.path.join(os.path.dirname(including), value))


def _entries(path: str, env: dict[str, str]) -> list[tuple[str, str]]:
    """(key, value) of one config file, its includes not followed (git parses it; nothing runs)."""
    return [(key, value or "") for key, value in entries(path, env)]


def entries(path: str, env: dict[str, str]) -> list[tuple[str, str | None]]:
    """(key, value) of one config file as git parses it, its includes not followed (nothing runs); value None for a
    key set without `=` (a boolean true). GIT_ERROR when git cannot read it."""
    proc = subprocess.run(
        ["git", "config", "--file", path, "--no-includes", "--list", "-z"],
        capture_output=True, timeout=60, env=env, cwd="/",
    )  # fmt: skip
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()[:300]
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git cannot read the config file {path}: {detail}", path=path)
    out: list[tuple[str, str | None]] = []
    for entry in proc.stdout.split(b"\0"):
        if entry:
            key, newline, value = entry.decode(errors="surrogateescape").partition("\n")
            out.append((key, value if newline else None))
    return out


def overrides(found: tuple[str, ...]) -> list[tuple[str, str]]:
    """(key, "") for every key found that is not on the allow-list, once each (case-insensitive where git is)."""
    out: dict[str, str] = {}
    for key in found:
        if not inert(key):
            out.setdefault(_canonical(key), key)
    return [(key, "") for key in out.values()]


def _canonical(key: str) -> str:
    section, _, rest = key.partition(".")
    sub, _, name = rest.rpartition(".")
    return f"{section.lower()}.{sub}.{name.lower()}" if sub else f"{section.lower()}.{name.lower()}"


def as_env(settings: list[tuple[str, str]]) -> dict[str, str]:
    """Settings as git's command-scope environment (`GIT_CONFIG_COUNT`, `_KEY_<i>`, `_VALUE_<i>`): a key and its
    value never parsed out of one string, whatever characters a subsection holds."""
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for i, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env
