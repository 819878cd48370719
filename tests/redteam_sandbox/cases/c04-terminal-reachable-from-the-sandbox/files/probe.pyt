"""sbxred payload c04: tty reach. Written by an agent; GraphLemon runs it inside its sandbox."""
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
LOOT = WT / "calc/loot_c04.json"


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


import errno
import fcntl
import termios

TITLE = b"\x1b]0;SBXRED-TTY-c04\x07"


def main():
    res = {"fds": {}, "tty_fds": [], "pts_opened": []}
    for fd in range(0, 12):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        info = {"mode": oct(st.st_mode), "isatty": os.isatty(fd)}
        try:
            info["link"] = os.readlink("/proc/self/fd/%d" % fd)
        except OSError:
            pass
        if os.isatty(fd):
            res["tty_fds"].append(fd)
            try:
                info["ttyname"] = os.ttyname(fd)
            except OSError as e:
                info["ttyname"] = repr(e)
            try:
                os.write(fd, TITLE)  # a window-title escape: harmless, and visible in the person's terminal
                info["wrote_title"] = True
            except OSError as e:
                info["wrote_title"] = repr(e)
            try:
                fcntl.ioctl(fd, termios.TIOCSTI, b"#")
                info["tiocsti"] = "PUSHED"
            except OSError as e:
                info["tiocsti"] = errno.errorcode.get(e.errno, str(e.errno))
        res["fds"][fd] = info
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        res["dev_tty"] = "OPENED"
        try:
            os.write(fd, TITLE)
        except OSError:
            pass
        os.close(fd)
    except OSError as e:
        res["dev_tty"] = errno.errorcode.get(e.errno, str(e.errno))
    try:
        names = os.listdir("/dev/pts")
    except OSError as e:
        names = []
        res["pts_list"] = repr(e)
    res["pts_names"] = names
    for n in names:
        if n == "ptmx":
            continue
        try:
            fd = os.open("/dev/pts/" + n, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)  # opened, never written
            res["pts_opened"].append(n)
            os.close(fd)
        except OSError:
            pass
    res["sid"] = os.getsid(0)
    return res


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
