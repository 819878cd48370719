"""The mount keeper: run as its own process by `root_identity.py` when GraphLemon runs as root. Standard library only.

It holds, for the life of the GraphLemon process that started it:
* a private mount namespace (a slave of the host's: host mounts reach it, none of its own reach the host), where
  it makes the sandbox's idmapped mounts: a folder of host root's is shown owned by the sandbox's host uid, so the
  sandbox can write its work tree while every file stays root's on disk (git's ownership check is unchanged);
* two user namespaces, made once: SANDBOX (`65534` -> the sandbox's host id, and host root as `1`, which only
  bubblewrap's own setup ever acts as: it needs it to reach root-only folders before it drops every capability)
  and IDMAP (`0` -> the sandbox's host id: the mapping of the idmapped mounts).

Requests are JSON lines on stdin, answers JSON lines on stdout; EOF (GraphLemon ended) ends it, and its mount
namespace with it. `{"op": "idmap", "path": P, "read_only": bool}` -> `{"ok": true, "mount": M}`: M, in the
keeper's namespace, is P shown through the IDMAP mapping (read-only if asked); the same folder (device and inode)
gets the same mount again while it exists.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_REC, MS_SLAVE = 0x4000, 0x80000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, 0o2000000
AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x100, 0x1000, 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_IDMAP = 0x1, 0x2, 0x4, 0x00100000
MNT_DETACH = 2
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # the same number on every architecture

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]  # fmt: skip


def check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def user_namespace(uid_map: str, gid_map: str) -> int:
    """A new user namespace with these maps (written by root, from outside), held by the returned descriptor."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child only makes the namespace and waits until it is held
        os.close(ready_r)
        os.close(done_w)
        code = 0 if libc.unshare(CLONE_NEWUSER) == 0 else 1
        os.write(ready_w, b"x")
        os.read(done_r, 1)
        os._exit(code)
    os.close(ready_w)
    os.close(done_r)
    try:
        os.read(ready_r, 1)
        for name, text in (("setgroups", "deny"), ("uid_map", uid_map), ("gid_map", gid_map)):
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(text)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(done_w, b"x")
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(done_w)


class Keeper:
    def __init__(self, staging: str, uid: int, gid: int) -> None:
        check(libc.unshare(CLONE_NEWNS), "unshare(mount namespace)")
        check(libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None), "mount --make-rslave /")
        check(libc.mount(b"tmpfs", staging.encode(), b"tmpfs", 0, b"size=1m,mode=700"), "mount tmpfs")
        self.staging = staging
        self.sandbox_ns = user_namespace(f"1 0 1\n65534 {uid} 1\n", f"1 0 1\n65534 {gid} 1\n")
        self.idmap_ns = user_namespace(f"0 {uid} 1\n", f"0 {gid} 1\n")
        self.mounts: dict[tuple[int, int, bool], str] = {}
        self.count = 0

    def idmap(self, path: str, read_only: bool) -> str:
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(0, f"{path} is a symbolic link")
        key = (st.st_dev, st.st_ino, read_only)
        self._sweep()
        if key in self.mounts:
            return self.mounts[key]
        self.count += 1
        target = os.path.join(self.staging, str(self.count))
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(target, 0o700)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        tree = check(libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(),
                                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW), "open_tree")  # fmt: skip
        try:
            flags = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (MOUNT_ATTR_RDONLY if read_only else 0)
            attr = MountAttr(flags, 0, 0, self.idmap_ns)
            check(libc.syscall(SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)),
                  "mount_setattr(idmap)")  # fmt: skip
            check(libc.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
                  "move_mount")  # fmt: skip
        finally:
            os.close(tree)
        self.mounts[key] = target
        return target

    def _sweep(self) -> None:
        """Drop the mounts of folders that no longer exist on the host (a removed work tree)."""
        for key, target in list(self.mounts.items()):
            try:
                alive = os.stat(target).st_nlink > 0
            except OSError:
                alive = False
            if not alive:
                libc.umount2(target.encode(), MNT_DETACH)
                try:
                    os.rmdir(target) if os.path.isdir(target) else os.unlink(target)
                except OSError:
                    pass
                del self.mounts[key]


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches GraphLemon's group: the keeper ends at its EOF
    staging, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        keeper = Keeper(staging, uid, gid)
    except OSError as exc:
        print(json.dumps({"ok": False, "error": str(exc)}), flush=True)
        return
    hello = {"ok": True, "pid": os.getpid(), "sandbox_ns_fd": keeper.sandbox_ns, "idmap_ns_fd": keeper.idmap_ns}
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = {"ok": True, "mount": keeper.idmap(str(request["path"]), bool(request.get("read_only")))}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            answer = {"ok": False, "error": str(exc)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
