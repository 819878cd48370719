"""The seccomp filter of a confined run, generated with libseccomp (through `pyseccomp`), never hand-written BPF.

Everything a test suite needs is allowed; what would let a process leave or widen
its sandbox is refused with EPERM: mounting and unmounting (old and new mount API),
changing root, entering or creating namespaces (`unshare`, `setns`, and `clone`
with a namespace flag), tracing or reading other processes (`ptrace`,
`process_vm_*`), the kernel keyring, eBPF, perf events, userfaultfd, opening files
by handle, loading modules or kernels, swap, reboot, and faking terminal input
(`TIOCSTI`, `TIOCLINUX`). No file gets a setuid or setgid bit: `chmod`, `fchmod`, `fchmodat`,
`fchmodat2`, `open`/`openat`/`creat` and `mknod`/`mknodat` with S_ISUID or S_ISGID in their mode are refused
(as root the writable folders are idmapped, so what the sandbox writes is root's on disk: a setuid file there would
be a setuid-root program on the host); `openat2` (its mode lives in memory) answers ENOSYS, so the C library falls
back to `openat`, and io_uring (which opens files without a system call per file) is refused. `clone3` answers ENOSYS (its flags live in memory a
filter cannot read), so the C library falls back to `clone`, whose flags are
checked. A syscall of another architecture (a 32-bit call on x86-64) kills the
process, so nothing is reached around the filter.

The BPF program is built once per process into a private file; bwrap reads it
from a file descriptor (`--seccomp FD`).
"""

from __future__ import annotations

import errno
import os
import tempfile
import threading
from pathlib import Path

DENIED = (
    "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount",
    "open_tree", "mount_setattr", "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "open_by_handle_at",
    "name_to_handle_at", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "swapon", "swapoff", "reboot", "syslog", "acct", "quotactl", "lookup_dcookie", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "vhangup", "nfsservctl", "uselib",
)  # fmt: skip
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080,
}  # fmt: skip
TERMINAL_IOCTLS = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}
SET_ID_BITS = (0o4000, 0o2000)  # S_ISUID, S_ISGID
# the calls that set a file's mode, and the index of their mode argument
MODE_ARGUMENT = {
    "chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "open": 2, "openat": 3, "creat": 1, "mknod": 1,
    "mknodat": 2,
}  # fmt: skip
NO_SYSCALL = ("clone3", "openat2")  # their arguments live in memory a filter cannot read: the C library falls back
REFUSED_RINGS = ("io_uring_setup", "io_uring_enter", "io_uring_register")


class _Cache:
    lock = threading.Lock()
    path: Path | None = None


def filter_file() -> Path:
    """The compiled filter (BPF), written once per process into a folder only this user can read."""
    with _Cache.lock:
        if _Cache.path is None or not _Cache.path.is_file():
            folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-seccomp-{os.getpid()}-"))
            path = folder / "filter.bpf"
            with open(path, "wb") as fh:
                build().export_bpf(fh)
            path.chmod(0o400)
            _Cache.path = path
        return _Cache.path


def build():
    """The filter as a libseccomp object (exported to BPF by `filter_file`, read as text by `pfc`)."""
    import pyseccomp as sc  # loads libseccomp: only when a run is confined

    refused = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        _add(rules, refused, name)  # a syscall this architecture does not have (`umount`, `iopl` on arm64): none
    for name in NO_SYSCALL:
        rules.add_rule(sc.ERRNO(errno.ENOSYS), name)
    for name in REFUSED_RINGS:
        _add(rules, refused, name)
    for name, index in MODE_ARGUMENT.items():
        for bit in SET_ID_BITS:
            _add(rules, refused, name, sc.Arg(index, sc.MASKED_EQ, bit, bit))
    for flag in NAMESPACE_FLAGS.values():
        rules.add_rule(refused, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for request in TERMINAL_IOCTLS.values():
        rules.add_rule(refused, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    return rules


def _add(rules, action, name: str, *args) -> None:
    """A rule for `name`, skipped where this architecture or libseccomp does not know the call (`open`, `chmod` on
    arm64; `fchmodat2` before libseccomp 2.6)."""
    try:
        rules.add_rule(action, name, *args)
    except (OSError, ValueError, RuntimeError):
        return


def available() -> tuple[bool, str]:
    """(True, "") when the filter can be built here, else (False, why not)."""
    try:
        filter_file()
    except (ImportError, OSError, RuntimeError, AttributeError) as exc:
        return False, f"the seccomp filter cannot be built (pyseccomp and libseccomp2 are needed): {exc}"
    return True, ""
