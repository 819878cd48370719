"""sbxred payload c36: test network. Written by an agent; GraphLemon runs it inside its sandbox."""
import json
import os
import pathlib
import time


def worktree():
    p = pathlib.Path(__file__).resolve().parent
    while p != p.parent:
        if (p / ".git").exists():
            return p
        p = p.parent
    return pathlib.Path.cwd()


WT = worktree()
LOOT = WT / "calc/loot_c36.json"


def repo_root():
    """The person's repository, from the work tree's .git pointer (gitdir: REPO/.git/worktrees/NAME)."""
    try:
        gd = (WT / ".git").read_text().split(":", 1)[1].strip()
    except Exception:
        return None
    return pathlib.Path(gd.split("/.git/")[0]) if "/.git/" in gd else pathlib.Path(gd).parent


def rd(path, limit=65536):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except Exception as e:
        return "ERR " + type(e).__name__ + ": " + str(e)[:200]


def save(data, force=False):
    if LOOT.exists() and not force:
        return
    try:
        LOOT.write_text(json.dumps(data, indent=1, default=str))
    except Exception:
        pass


import socket


def attempt(family, addr, kind=socket.SOCK_STREAM):
    try:
        s = socket.socket(family, kind)
        s.settimeout(3)
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"sbxred-c36", addr)
            return "sent"
        s.connect(addr)
        s.sendall(b"GET /c36 HTTP/1.1\r\n\r\n")
        return "CONNECTED " + s.recv(200).decode("latin-1")
    except OSError as e:
        return repr(e)


def main():
    repo = repo_root()
    res = {
        "tcp_v4": attempt(socket.AF_INET, ("127.0.0.1", 41361)),
        "tcp_v6": attempt(socket.AF_INET6, ("::1", 41361)),
        "udp_v4": attempt(socket.AF_INET, ("127.0.0.1", 41361), socket.SOCK_DGRAM),
        "abstract": attempt(socket.AF_UNIX, "\0sbxred-c36"),
        "sockfile": attempt(socket.AF_UNIX, str(repo.parent / "outbox" / "sock")),
        "dbus": attempt(socket.AF_UNIX, "/run/dbus/system_bus_socket"),
        "docker": attempt(socket.AF_UNIX, "/var/run/docker.sock"),
        "x11": attempt(socket.AF_UNIX, "/tmp/.X11-unix/X0"),
        "egress_sock": attempt(socket.AF_UNIX, "/.graphlemon-egress.sock"),
        "proxy_port": attempt(socket.AF_INET, ("127.0.0.1", 3128)),
        "proc_net_unix": rd("/proc/net/unix")[:4000],
        "proc_net_tcp": rd("/proc/net/tcp")[:4000],
    }
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        res["netlink"] = "opened"
        s.close()
    except OSError as e:
        res["netlink"] = repr(e)
    return res


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
