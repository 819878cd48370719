"""Run inside a confined run by `graphlemon doctor sandbox`: what this process can see and do, as one JSON line.

Standard library only (it runs with whatever Python the sandbox shows). Every attempt that
would change something outside is one the sandbox must refuse; what it tries is harmless
when refused and names what broke when not (the only kernel setting it opens for writing is the
sandbox's own hostname, in its own UTS namespace; host-wide ones are only asked `access(W_OK)`).
An optional JSON argument asks for more: `credential_names` (looked for in the home's mounts),
`person_config` (a folder that must not be there), `person_tree` (the person's repository: what of it is
there), `egress` (the checks of a sandbox whose only way
out is the egress proxy: `allowed` and `denied` CONNECT targets, the host's `loopback` port and
`abstract` socket name).
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import stat
import subprocess
import sys

EGRESS_BRIDGE = ("127.0.0.1", 3128)

LIMITS = {"Max processes": "processes", "Max file size": "file_size", "Max open files": "open_files",
          "Max cpu time": "cpu_seconds", "Max address space": "address_space"}  # fmt: skip
HOST_PATHS = ("/run", "/var/run", "/home", "/srv", "/mnt", "/media", "/opt", "/var/lib", "/root/.ssh")
SCANNED = ("/tmp", "/var/tmp", "/etc", "/dev")


def status() -> dict[str, str]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def limits() -> dict[str, str]:
    out = {}
    with open("/proc/self/limits") as fh:
        for line in fh.readlines()[1:]:
            for label, name in LIMITS.items():
                if line.startswith(label):
                    out[name] = line[len(label) :].split()[0]
    return out


def refused(call) -> str:
    """'refused (why)' when the call fails, 'ALLOWED' when it succeeds."""
    try:
        call()
    except OSError as exc:
        return f"refused ({exc.strerror or exc})"
    return "ALLOWED"


def libc_call(name: str, *args: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def mount_attempt() -> None:
    proc = subprocess.run(["mount", "-o", "remount,bind,rw", "/"], capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        raise OSError(proc.returncode, proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "refused")


def ptrace_sibling() -> None:
    child = subprocess.Popen(["sleep", "10"])
    try:
        libc_call("ptrace", 16, child.pid, 0, 0)  # PTRACE_ATTACH
    finally:
        child.kill()


def host_paths(home: str) -> list[str]:
    """Host folders that are visible: present, and more than the way to the private home."""
    found = []
    for path in HOST_PATHS:
        if not os.path.lexists(path):
            continue
        if home.startswith(path.rstrip("/") + "/"):
            toward = home[len(path.rstrip("/")) + 1 :].split("/", 1)[0]
            if set(os.listdir(path)) <= {toward}:
                continue
        found.append(path)
    return found


def mounts() -> list[str]:
    seen = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            options = fields[5].split(",")
            seen.append(f"{fields[4]} ({'rw' if 'rw' in options else 'ro'})")
    return seen


def sockets(roots: list[str], limit: int = 20000) -> list[str]:
    """Unix socket files under the writable and host-like folders (bounded walk)."""
    found, count = [], 0
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                count += 1
                path = os.path.join(folder, name)
                try:
                    if stat.S_ISSOCK(os.lstat(path).st_mode):
                        found.append(path)
                except OSError:
                    continue
            if count > limit:
                return found
    return found


def network() -> str:
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    except OSError as exc:
        return f"none ({exc.strerror or exc})"
    return "REACHABLE"


def uid_map() -> str:
    """`inside -> outside` for this process's uid (the host id behind the sandbox's user)."""
    uid = os.getuid()
    with open("/proc/self/uid_map") as fh:
        for line in fh:
            inside, outside, count = (int(x) for x in line.split())
            if inside <= uid < inside + count:
                return f"{uid} -> {outside + uid - inside}"
    return f"{uid} -> unmapped"


def shm_size() -> int:
    st = os.statvfs("/dev/shm")
    return st.f_blocks * st.f_frsize


def credentials(names: list[str], home: str) -> list[str]:
    """Credential-named entries with content, at the top two levels of every mount under the home."""
    wanted, found = set(names), []
    roots = [m.split(" (")[0] for m in mounts() if m.startswith(home.rstrip("/") + "/")]
    for root in roots:
        level = [root]
        for _depth in range(2):
            below = []
            for folder in level:
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for entry in entries:
                    if entry.name in wanted and _has_content(entry.path):
                        found.append(entry.path)
                    elif entry.is_dir(follow_symlinks=False):
                        below.append(entry.path)
            level = below
    return sorted(set(found))


def _has_content(path: str) -> bool:
    try:
        return bool(os.listdir(path)) if os.path.isdir(path) else os.path.getsize(path) > 0
    except OSError:
        return False


def connect_through_proxy(target: str) -> str:
    """The status line the egress proxy answers a CONNECT with."""
    with socket.create_connection(EGRESS_BRIDGE, timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return s.recv(200).split(b"\r\n")[0].decode(errors="replace")


def egress(spec: dict) -> dict:
    out = {"allowed": _status(lambda: connect_through_proxy(spec["allowed"]))}
    out["denied"] = [_status(lambda t=t: connect_through_proxy(t)) for t in spec["denied"]]
    out["loopback"] = refused(lambda: socket.create_connection(("127.0.0.1", spec["loopback"]), timeout=3).close())
    out["outside"] = network()

    def abstract() -> None:
        s = socket.socket(socket.AF_UNIX)
        s.connect("\0" + spec["abstract"])
        s.close()

    out["abstract"] = refused(abstract)
    return out


def _status(call) -> str:
    try:
        return call()
    except OSError as exc:
        return f"failed ({exc.strerror or exc})"


def set_id(work: str) -> str:
    """Whether a file in the work tree can get a setuid bit (it must not: as root that is a setuid-root program)."""
    path = os.path.join(work, ".graphlemon-probe-setid")
    open(path, "w").close()
    try:
        return refused(lambda: os.chmod(path, 0o4755))
    finally:
        os.unlink(path)


def listing(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def main() -> None:
    asked = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    work = os.getcwd()
    info = status()
    report = {
        "uid": os.getuid(), "gid": os.getgid(), "cap_eff": info.get("CapEff"), "cap_bnd": info.get("CapBnd"),
        "no_new_privs": info.get("NoNewPrivs"), "seccomp": info.get("Seccomp"), "limits": limits(),
        "mount": refused(mount_attempt), "unshare_user": refused(lambda: libc_call("unshare", 0x10000000)),
        "ptrace_sibling": refused(ptrace_sibling),
        "write_proc_self_root": refused(lambda: open("/proc/self/root/usr/graphlemon-probe", "w").close()),
        "write_root": refused(lambda: open("/graphlemon-probe", "w").close()),
        "host_paths": host_paths(os.environ.get("HOME", "/")),
        "mounts": mounts(), "sockets": sockets([work, *SCANNED, os.environ.get("HOME", "/")]),
        "network": network(), "python": sys.executable, "uid_map": uid_map(),
        "core_pattern_writable": os.access("/proc/sys/kernel/core_pattern", os.W_OK),
        "write_hostname": refused(lambda: open("/proc/sys/kernel/hostname", "w").write("sandbox")),
        "shm_bytes": shm_size(), "write_dev": refused(lambda: open("/dev/graphlemon-probe", "w").close()),
        "credentials": credentials(asked.get("credential_names", []), os.environ.get("HOME", "/")),
        "set_id": set_id(work),
    }  # fmt: skip
    if "person_tree" in asked:
        report["person_tree"] = listing(asked["person_tree"])
    if "person_config" in asked:
        config = os.environ.get("CLAUDE_CONFIG_DIR", "")
        report["config_dir"] = config
        report["config_writable"] = refused(lambda: open(os.path.join(config, "settings.json"), "w").close())
        report["person_config_visible"] = os.path.exists(asked["person_config"])
    if "egress" in asked:
        report["egress"] = egress(asked["egress"])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
