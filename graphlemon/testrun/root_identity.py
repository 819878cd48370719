"""As root, the sandbox's user is an unprivileged host id, never host root.

A user namespace that bubblewrap makes as root maps the sandbox's uid to root outside, so root-owned files with an
owner write bit (`/proc/sys/kernel/core_pattern`) would pass the permission check inside. So when GraphLemon runs as
root, a confined run joins a user namespace GraphLemon made (bwrap `--userns`) in which the sandbox's `65534` is
`host_ids()` outside: an id no user has (root's range in /etc/subuid and /etc/subgid when there is one, else
`DEFAULT_HOST_ID`). Host root is mapped there as uid/gid 1, which only bwrap's own setup acts as, to reach
root-only folders (a Python under /root) before it becomes 65534 and drops every capability.

The folders the run may write are root's (GraphLemon made them) and stay root's on disk: the sandbox sees them
through idmapped mounts (root shown as the sandbox's id), made in a private mount namespace by the mount keeper
(`idmap_keeper.py`, one process per GraphLemon process, ended with it), so git's ownership check on the host is
unchanged. The launcher enters that namespace (`nsenter`, which also drops root's supplementary groups) before
bwrap starts. The work tree's git dirs are shown read-only the same way, so git inside sees them as its own.

Where this cannot be made (no mount API, a file system without idmapped mounts) a confined run as root is
refused with the reason (`graphlemon doctor sandbox` shows it), never run as host root.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

KEEPER = Path(__file__).resolve().with_name("idmap_keeper.py")
DEFAULT_HOST_ID = 0x7000_FFFE  # above systemd's container range, below its reserved ones: no user has it
USERNS_FD = 4  # the descriptor bwrap reads the user namespace from (`--userns`)


class RootIdentityError(OSError):
    """The unprivileged identity cannot be made here (the reason is the message)."""


def needed() -> bool:
    """True when GraphLemon runs as root: only then does bwrap's own user namespace map the sandbox to root."""
    return os.geteuid() == 0


def host_ids() -> tuple[int, int]:
    """(uid, gid) behind the sandbox's 65534: the first id of root's range in /etc/subuid and /etc/subgid, else
    DEFAULT_HOST_ID."""
    return _first_subordinate("/etc/subuid"), _first_subordinate("/etc/subgid")


def _first_subordinate(path: str) -> int:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return DEFAULT_HOST_ID
    for line in lines:
        fields = line.strip().split(":")
        if len(fields) == 3 and fields[0] in ("root", "0") and fields[1].isdigit() and fields[2].isdigit():
            if int(fields[2]) > 0 and int(fields[1]) > 0:
                return int(fields[1])
    return DEFAULT_HOST_ID


@dataclass
class _Keeper:
    proc: subprocess.Popen
    pid: int
    sandbox_ns_fd: int
    staging: Path
    owner: int  # the GraphLemon process that started it (a forked child starts its own)


class _State:
    lock = threading.Lock()
    keeper: _Keeper | None = None
    shown: dict[tuple[int, int, bool], Path] = {}  # (device, inode, read-only) -> the keeper's mount of it


def _keeper() -> _Keeper:
    with _State.lock:
        k = _State.keeper
        if k is not None and k.owner == os.getpid() and k.proc.poll() is None:
            return k
        _State.keeper = _start()
        _State.shown = {}
        return _State.keeper


def _start() -> _Keeper:
    staging = Path(tempfile.mkdtemp(prefix=f"graphlemon-idmap-{os.getpid()}-"))
    uid, gid = host_ids()
    argv = [sys.executable, "-I", "-S", str(KEEPER), str(staging), str(uid), str(gid)]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    except OSError as exc:
        raise RootIdentityError(f"the mount keeper could not start: {exc}") from None
    hello = _read(proc)
    if not hello.get("ok"):
        proc.wait(timeout=10)
        shutil.rmtree(staging, ignore_errors=True)
        raise RootIdentityError(f"the sandbox's own identity cannot be made here: {hello.get('error')}")
    keeper = _Keeper(proc, int(hello["pid"]), int(hello["sandbox_ns_fd"]), staging, os.getpid())
    atexit.register(_stop, keeper)
    return keeper


def _read(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline() if proc.stdout else ""
    try:
        return json.loads(line)
    except ValueError:
        return {"ok": False, "error": f"the mount keeper ended ({proc.poll()}): {line.strip()[:200]}"}


def _stop(keeper: _Keeper) -> None:
    try:
        if keeper.proc.stdin:
            keeper.proc.stdin.close()
        keeper.proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        keeper.proc.kill()
    shutil.rmtree(keeper.staging, ignore_errors=True)


def idmapped(path: Path, *, read_only: bool = False) -> Path:
    """Where `path` (a folder or a file of root's) is seen owned by the sandbox's id, in the keeper's namespace."""
    keeper = _keeper()
    st = os.stat(path, follow_symlinks=False)
    key = (st.st_dev, st.st_ino, read_only)
    known = _State.shown.get(key)
    if known is not None and _still_shown(keeper, known, st):
        return known  # no round trip: the keeper's mount is still that folder
    with _State.lock:
        try:
            keeper.proc.stdin.write(json.dumps({"op": "idmap", "path": str(path), "read_only": read_only}) + "\n")
            keeper.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise RootIdentityError(f"the mount keeper is gone: {exc}") from None
        answer = _read(keeper.proc)
    if not answer.get("ok"):
        raise RootIdentityError(f"{path} cannot be shown to the sandbox's own user: {answer.get('error')}")
    _State.shown[key] = Path(answer["mount"])
    return _State.shown[key]


def _still_shown(keeper: _Keeper, mount: Path, source: os.stat_result) -> bool:
    """The keeper's mount, seen through its root, is still the same live folder or file."""
    try:
        seen = os.stat(f"/proc/{keeper.pid}/root{mount}")
    except OSError:
        return False
    return (seen.st_dev, seen.st_ino) == (source.st_dev, source.st_ino) and seen.st_nlink > 0


def launcher_steps() -> tuple[list[str], str]:
    """(the command that enters the keeper's mount namespace as root with no supplementary groups, the launcher's
    redirection that opens the sandbox's user namespace on USERNS_FD)."""
    keeper = _keeper()
    enter = ["/usr/bin/nsenter", f"--mount=/proc/{keeper.pid}/ns/mnt", "-G", "0", "-S", "0", "--"]
    return enter, f"{USERNS_FD}</proc/{keeper.pid}/fd/{keeper.sandbox_ns_fd}"


def identity_args() -> list[str]:
    """bwrap's identity options as root: join the prepared user namespace and become 65534 there."""
    return ["--userns", str(USERNS_FD)]
