"""The one way GraphLemon runs git: never a program the repository (or an agent writing in it) chose.

Every git call GraphLemon makes goes through `git()`:

* hooks off (`core.hooksPath=/dev/null`; callers that commit pass `--no-verify` too),
  `core.fsmonitor=false`, no pager, editor, credential helper, askpass, ssh command,
  external diff, GPG program or alternate-refs command of anyone's choosing;
* the filter, textconv and merge drivers named in the repository's own config are
  emptied for the call (attributes in the work tree may name them; none runs);
* system and global config ignored (`GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`),
  every inherited `GIT_*` variable dropped (the caller's identity is passed explicitly);
* before each call, the work tree's `.git` is checked (`verify_work_tree`): a linked
  work tree's pointer must name an admin dir `<common>/worktrees/<name>` that points back
  at it, whose common dir is a real git dir outside the work tree (and the expected one
  when the caller knows it); a work tree under a `.graphlemon/worktrees/` folder (the
  loop's) must be such a linked work tree. Anything else is `WORKTREE_TAMPERED`, with
  what was found as evidence, and git is not run.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from .errors import ErrorCode, GraphLemonError

SAFE_CONFIG = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat", "core.editor=:", "sequence.editor=:",
    "credential.helper=", "core.askPass=", "core.sshCommand=ssh", "core.gitProxy=",
    "core.alternateRefsCommand=", "gpg.program=gpg", "commit.gpgSign=false", "tag.gpgSign=false",
    "core.attributesFile=/dev/null", "core.untrackedCache=false", "protocol.ext.allow=never",
)  # fmt: skip
ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
    "PAGER": "cat", "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
}  # fmt: skip
DRIVER_KEYS = {"filter": ("clean", "smudge", "process"), "diff": ("textconv", "command"), "merge": ("driver",)}
LOOP_WORKTREES = (".graphlemon", "worktrees")  # where the loop makes its work trees
TIMEOUT = 600.0


def git(
    cwd: Path | str,
    *args: str,
    check: bool = True,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    common_dir: Path | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git args` in `cwd` under the rules above; GIT_ERROR on a non-zero exit when `check`.

    `common_dir`: the git dir the work tree must belong to, when the caller knows it."""
    cwd = Path(cwd)
    git_dir, common = verify_work_tree(cwd, common_dir)
    argv = ["git", *_options(git_dir, common), *_no_diff_programs(args)]
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        proc = subprocess.run(
            argv, cwd=cwd, input=input, capture_output=True, timeout=timeout, env={**base, **ENV, **(env or {})}
        )
    except subprocess.TimeoutExpired:
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {args[0]} did not finish within {timeout:g} s in {cwd}") from None
    if check and proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise GraphLemonError(
            ErrorCode.GIT_ERROR, f"git {' '.join(args)[:200]} failed in {cwd}: {detail}", action=args[0] if args else ""
        )
    return proc


def out(cwd: Path | str, *args: str, common_dir: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """The stripped text output of a git call that must succeed."""
    return git(cwd, *args, common_dir=common_dir, env=env).stdout.decode(errors="surrogateescape").strip()


def text(cwd: Path | str, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A git call whose exit code the caller reads, with its output as text (never raises GIT_ERROR)."""
    proc = git(cwd, *args, check=False, env=env)
    decode = lambda b: b.decode(errors="replace")  # noqa: E731
    return subprocess.CompletedProcess(proc.args, proc.returncode, decode(proc.stdout), decode(proc.stderr))


DIFF_COMMANDS = ("diff", "show", "log")


def _no_diff_programs(args: tuple[str, ...]) -> tuple[str, ...]:
    """A command that may print a diff gets `--no-ext-diff --no-textconv`: no external diff or textconv program of
    the repository's choosing runs (an empty `diff.external` would be a command of its own: git tries to run it)."""
    if args and args[0] in DIFF_COMMANDS:
        return (args[0], "--no-ext-diff", "--no-textconv", *args[1:])
    return args


def _options(git_dir: Path | None, common: Path | None) -> list[str]:
    options: list[str] = []
    for setting in (*SAFE_CONFIG, *(f"safe.directory={d}" for d in _safe_directories())):
        options += ["-c", setting]
    for key in _driver_keys(git_dir, common):
        options += ["-c", f"{key}="]
        if key.startswith("filter.") and key.endswith(".clean"):
            options += ["-c", f"{key.removesuffix('.clean')}.required=false"]
    return options


# -- the work tree's git dir ------------------------------------------------------------------------


def verify_work_tree(work_tree: Path, common_dir: Path | None = None) -> tuple[Path | None, Path | None]:
    """(git dir, common dir) of `work_tree` when its `.git` is what git and GraphLemon made; WORKTREE_TAMPERED
    otherwise. A folder without `.git` (git looks above it) is left to git: (None, None)."""
    dot_git = work_tree / ".git"
    in_loop = _under_loop_worktrees(work_tree)
    if not os.path.lexists(dot_git):
        if in_loop:
            raise _tampered(work_tree, "its .git pointer is gone")
        return None, None
    if dot_git.is_symlink():
        raise _tampered(work_tree, f".git is a symlink (to {os.readlink(dot_git)!r})")
    if dot_git.is_dir():
        if in_loop:
            raise _tampered(work_tree, ".git is a folder (a repository of its own), not the pointer the loop made")
        _expect(work_tree, dot_git.resolve(), common_dir, "its git dir")
        return dot_git.resolve(), dot_git.resolve()
    text = _read_small(dot_git)
    if not text.startswith("gitdir:"):
        raise _tampered(work_tree, f"its .git file is not a git pointer: {text[:120]!r}")
    named = Path(text.removeprefix("gitdir:").strip())
    admin = named if named.is_absolute() else work_tree / named
    real_admin = Path(os.path.realpath(admin))
    common = _common_of(work_tree, admin, real_admin, text)
    _expect(work_tree, common, common_dir, "its pointer's repository")
    return real_admin, common


def _common_of(work_tree: Path, admin: Path, real_admin: Path, text: str) -> Path:
    here = Path(os.path.realpath(work_tree))
    if not admin.is_dir() or admin.is_symlink():
        raise _tampered(work_tree, f"its pointer ({text[:200]!r}) names no git admin folder")
    if real_admin == here or here in real_admin.parents:
        raise _tampered(work_tree, f"its pointer ({text[:200]!r}) names a git dir inside the work tree")
    named = _read_small(real_admin / "commondir") if (real_admin / "commondir").is_file() else ""
    if not named:
        raise _tampered(work_tree, f"its pointer ({text[:200]!r}) names a folder that is not a linked work tree's")
    common = Path(os.path.realpath(real_admin / named))
    if real_admin.parent != common / "worktrees" or here in common.parents or common == here:
        raise _tampered(work_tree, f"its pointer ({text[:200]!r}) names {real_admin}, not <repository>/worktrees/<name>")
    back = _read_small(real_admin / "gitdir") if (real_admin / "gitdir").is_file() else ""
    if not back or Path(os.path.realpath(back)) != here / ".git":
        raise _tampered(work_tree, f"the admin folder {real_admin} belongs to another work tree ({back[:200]!r})")
    if not (common / "HEAD").is_file() or not (common / "objects").is_dir():
        raise _tampered(work_tree, f"{common} is not a git repository")
    return common


def _expect(work_tree: Path, found: Path, expected: Path | None, what: str) -> None:
    if expected is not None and found != Path(os.path.realpath(expected)):
        raise _tampered(work_tree, f"{what} is {found}, not the repository GraphLemon made it in ({expected})")


def _under_loop_worktrees(work_tree: Path) -> bool:
    parts = Path(os.path.abspath(work_tree)).parts
    return any(parts[i : i + 2] == LOOP_WORKTREES for i in range(len(parts) - 3))


def _read_small(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


def _tampered(work_tree: Path, why: str) -> GraphLemonError:
    return GraphLemonError(
        ErrorCode.WORKTREE_TAMPERED,
        f"work tree {work_tree}: {why}; git was not run in it (a program of the repository's choosing could run)",
        work_tree=str(work_tree),
        evidence=why,
    )


@lru_cache(maxsize=1)
def _safe_directories() -> tuple[str, ...]:
    """The person's `safe.directory` entries (system and global config, `GIT_CONFIG_COUNT` in the environment),
    passed on: which repositories of other owners they trust is their choice, and no program runs from it."""
    found: list[str] = []
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS")}
    for scope in ("--system", "--global"):
        proc = subprocess.run(["git", "config", scope, "--get-all", "safe.directory"], capture_output=True,
                              env=env, timeout=60, cwd="/")  # fmt: skip
        found += proc.stdout.decode(errors="replace").splitlines()
    count = os.environ.get("GIT_CONFIG_COUNT", "")
    for i in range(int(count) if count.isdigit() else 0):
        if os.environ.get(f"GIT_CONFIG_KEY_{i}", "").lower() == "safe.directory":
            found.append(os.environ.get(f"GIT_CONFIG_VALUE_{i}", ""))
    return tuple(d for d in dict.fromkeys(found) if d)


# -- drivers named in the repository's config -------------------------------------------------------

_drivers_lock = threading.Lock()
_drivers: dict[tuple, tuple[str, ...]] = {}


def _driver_keys(git_dir: Path | None, common: Path | None) -> tuple[str, ...]:
    """`filter.<x>.clean`, `diff.<x>.textconv`, `merge.<x>.driver`, ... set in the repository's config files (read
    with `git config --file`, which runs nothing), cached while those files are unchanged."""
    files = [p for p in {common and common / "config", git_dir and git_dir / "config.worktree"} if p and p.is_file()]
    if not files:
        return ()
    key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(files))
    with _drivers_lock:
        if key in _drivers:
            return _drivers[key]
    found: set[str] = set()
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for path in files:
        proc = subprocess.run(
            ["git", "config", "--file", str(path), "--includes", "--name-only", "--list"],
            capture_output=True, timeout=60, env={**base, **ENV}, cwd="/",
        )  # fmt: skip
        for name in proc.stdout.decode(errors="replace").splitlines():
            section, _, rest = name.partition(".")
            sub, _, leaf = rest.rpartition(".")
            if sub and leaf.lower() in DRIVER_KEYS.get(section.lower(), ()):
                found.add(name)
    keys = tuple(sorted(found))
    with _drivers_lock:
        _drivers[key] = keys
    return keys
