"""The one way GraphLemon runs git: never a program the repository (or an agent writing in it) chose.

Every git call GraphLemon makes goes through `git()`:

* hooks off (`core.hooksPath=/dev/null`; callers that commit pass `--no-verify` too),
  `core.fsmonitor=false`, no pager, editor, credential helper, askpass, ssh command,
  external diff, GPG program or alternate-refs command of anyone's choosing;
* git sees only config GraphLemon controls: every key of the repository's own config, and of
  every file it includes (`include.path`, `includeIf.*.path`, whatever the condition), that is not
  on an allow-list of inert keys is emptied for the call in command scope (git_config.py): filter,
  textconv and merge drivers, fsmonitor, aliases, `remote.*.uploadpack`, whatever a future git adds;
  an attribute in the work tree may name a driver, and none runs;
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
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from . import beneath, git_config
from .errors import ErrorCode, GraphLemonError

# GraphLemon's own settings, last (they win): no hook, fsmonitor, pager, editor, helper or signing program runs
SAFE_CONFIG = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat", "core.editor=:", "sequence.editor=:",
    "credential.helper=", "core.askPass=", "core.sshCommand=ssh", "core.gitProxy=",
    "core.alternateRefsCommand=", "gpg.program=gpg", "commit.gpgSign=false", "tag.gpgSign=false",
    "core.attributesFile=/dev/null", "core.untrackedCache=false", "protocol.ext.allow=never",
    "log.showSignature=false", "submodule.recurse=false", "color.ui=never",
)  # fmt: skip
ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
    "PAGER": "cat", "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
    "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1",
}  # fmt: skip
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
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    safe = {**base, **ENV}
    argv = ["git", *_no_diff_programs(args)]
    config = git_config.as_env(_settings(cwd, git_dir, common, safe))
    try:
        proc = subprocess.run(
            argv, cwd=cwd, input=input, capture_output=True, timeout=timeout, env={**safe, **(env or {}), **config}
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


def _settings(cwd: Path, git_dir: Path | None, common: Path | None, env: dict[str, str]) -> list[tuple[str, str]]:
    """The config git runs with, in command scope (it wins): every key of the repository's config graph that is not
    inert emptied (git_config.py), then GraphLemon's own settings, then the person's `safe.directory` entries."""
    if git_dir is None and common is None:
        git_dir, common = _discovered(cwd, env)
    settings = git_config.overrides(git_config.keys(git_dir, common, env))
    settings += [tuple(s.split("=", 1)) for s in SAFE_CONFIG]  # type: ignore[misc]
    return settings + [("safe.directory", d) for d in safe_directories()]


def _discovered(cwd: Path, env: dict[str, str]) -> tuple[Path | None, Path | None]:
    """The git dir and common dir git finds from a folder without its own `.git` (one above it, or a bare
    repository), so their config is listed too; (None, None) outside any repository."""
    try:
        proc = subprocess.run(["git", "rev-parse", "--absolute-git-dir", "--git-common-dir"], cwd=cwd,
                              capture_output=True, timeout=60, env=env)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    lines = proc.stdout.decode(errors="surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return None, None
    return Path(lines[0]), Path(os.path.realpath(cwd / lines[1]))  # the common dir is printed relative to cwd


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
    text = _read_small(work_tree, ".git")
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
    named = _read_small(real_admin, "commondir")
    if not named:
        raise _tampered(work_tree, f"its pointer ({text[:200]!r}) names a folder that is not a linked work tree's")
    common = Path(os.path.realpath(real_admin / named))
    if real_admin.parent != common / "worktrees" or here in common.parents or common == here:
        raise _tampered(work_tree, f"its pointer ({text[:200]!r}) names {real_admin}, not <repository>/worktrees/<name>")
    back = _read_small(real_admin, "gitdir")
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


def _read_small(folder: Path, name: str) -> str:
    """The first 4 KiB of a small file of git's, through the safe reader ("" when absent, a link or a FIFO)."""
    try:
        return beneath.read_bytes(folder, name, max_bytes=4096, truncate=True).decode("utf-8", errors="replace").strip()
    except (OSError, GraphLemonError):
        return ""


def _tampered(work_tree: Path, why: str) -> GraphLemonError:
    return GraphLemonError(
        ErrorCode.WORKTREE_TAMPERED,
        f"work tree {work_tree}: {why}; git was not run in it (a program of the repository's choosing could run)",
        work_tree=str(work_tree),
        evidence=why,
    )


@lru_cache(maxsize=1)
def safe_directories() -> tuple[str, ...]:
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
