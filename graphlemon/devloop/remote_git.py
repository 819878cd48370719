"""Code through a git remote: the devloop publishes a task's branches, a worker clones them, works in its own
work trees and pushes the unit's branch back, the devloop fetches it (docs/scale.md).

Every git call goes through `gitrun` (no hook, fsmonitor, credential helper or driver of anyone's choosing).
The remote is any URL git fetches without asking anyone: `file://`, `git://`, `ssh://` (keys of the worker's
user) or `http(s)://` (a token in the URL, kept in a Prefect block).
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from .. import gitrun
from ..errors import ErrorCode, GraphLemonError, invalid_param

SCHEMES = ("file", "git", "ssh", "http", "https")
BLOCK_PREFIX = "block:"  # a project's `git_remote` naming a Prefect block that holds the URL (blocks/git_remote.py)


def check_remote_url(url: object) -> str:
    """The remote as given, when it is a URL git can fetch from; INVALID_PARAM saying why otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise invalid_param("the project's git remote is empty; set it to a URL such as file:///srv/git/app.git")
    if len(url) > 2000 or url.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise invalid_param(f"git remote {shown(url)!r} is not a URL git can fetch (control characters, a leading "
                            "'-' or over 2000 characters)")  # fmt: skip
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise invalid_param(f"git remote {shown(url)!r} is not a URL: {exc}") from None
    if parts.scheme not in SCHEMES:
        raise invalid_param(f"git remote {shown(url)!r} is not a URL git can fetch: the scheme must be one of "
                            f"{', '.join(s + '://' for s in SCHEMES)}")  # fmt: skip
    if parts.scheme == "file" and (parts.netloc not in ("", "localhost") or not parts.path.startswith("/")):
        raise invalid_param(f"git remote {shown(url)!r}: a file:// URL names an absolute path on this machine")
    if parts.scheme != "file" and not host:
        raise invalid_param(f"git remote {shown(url)!r} names no host")
    return url


def shown(url: str) -> str:
    """The URL without a password or token (what messages and logs may show)."""
    try:
        parts = urlsplit(url)
        if parts.password is None and not (parts.username and parts.scheme in ("http", "https")):
            return url
        return parts._replace(netloc=f"***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")).geturl()
    except ValueError:
        return "<unparsable URL>"


def _git(cwd: Path, url: str, *args: str) -> str:
    try:
        return gitrun.out(cwd, *args)
    except GraphLemonError as exc:
        if exc.code != ErrorCode.GIT_ERROR:
            raise
        message = exc.message.replace(url, shown(url))
        raise GraphLemonError(
            ErrorCode.GIT_ERROR, f"git remote {shown(url)} cannot be used: {message}", remote=shown(url)
        ) from None


def _talk(cwd: Path, url: str, verb: str, *options: str, refs: tuple[str, ...] = ()) -> str:
    """`git <verb> <options> -- <url> <refs>` with the remote, its serving side started as `_served` says."""
    serving = "receive-pack" if verb == "push" else "upload-pack"
    return _git(cwd, url, verb, *options, *_served(url, serving), "--", url, *refs)


def _served(url: str, command: str) -> list[str]:
    """For a remote on this machine git starts the serving command itself, with the remote's own configuration
    (the caller's `-c` settings are not passed on): it is started with hooks off, so no hook of the remote runs
    here, and with the person's `safe.directory` entries (gitrun.safe_directories), so a remote another user owns
    is served when the person trusts it as git's ownership check asks. A remote elsewhere runs its own server (its
    hooks and ownership are the server's business)."""
    if urlsplit(url).scheme != "file":
        return []
    trusted = [f"-c {shlex.quote(f'safe.directory={d}')}" for d in gitrun.safe_directories()]
    return [f"--{command}=" + " ".join(["git -c core.hooksPath=/dev/null -c core.fsmonitor=false", *trusted, command])]


def probe(url: str) -> None:
    """GIT_ERROR naming the remote when it cannot be read (not there, not a repository, refused)."""
    check_remote_url(url)
    with tempfile.TemporaryDirectory(prefix="graphlemon-probe-") as tmp:
        _talk(Path(tmp), url, "ls-remote", "--heads")


def publish(repo_root: Path, url: str, branches: list[str]) -> None:
    """Push `branches` of the repository to the remote as they are here (the devloop owns them)."""
    specs = [f"+refs/heads/{b}:refs/heads/{b}" for b in branches]
    _talk(repo_root, url, "push", "-q", "--no-verify", refs=tuple(specs))


def local_branches(repo_root: Path, prefix: str) -> list[str]:
    out = gitrun.out(repo_root, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{prefix}")
    return [line for line in out.splitlines() if line]


def clone_task(url: str, dest: Path, task_id: str, detach_at: str) -> None:
    """A fresh repository at `dest` holding the task's branches from the remote (each as a local branch), its
    work tree checked out detached at `detach_at` (so every branch is free for a work tree of its own)."""
    check_remote_url(url)
    dest.mkdir(parents=True, exist_ok=True)
    gitrun.out(dest, "init", "-q")
    prefix = f"refs/heads/graphlemon/{task_id}/"
    _talk(dest, url, "fetch", "-q", "--no-tags", refs=(f"+{prefix}*:{prefix}*",))
    gitrun.out(dest, "checkout", "-q", "--detach", detach_at)


def remote_has(repo_root: Path, url: str, branch: str) -> bool:
    return bool(_talk(repo_root, url, "ls-remote", "--heads", refs=(f"refs/heads/{branch}",)))


def fetch_branch(repo_root: Path, url: str, branch: str) -> str:
    """The remote's `branch` as the local branch of that name (replacing it); -> its commit."""
    _talk(repo_root, url, "fetch", "-q", "--no-tags", refs=(f"+refs/heads/{branch}:refs/heads/{branch}",))
    return gitrun.out(repo_root, "rev-parse", f"refs/heads/{branch}")
