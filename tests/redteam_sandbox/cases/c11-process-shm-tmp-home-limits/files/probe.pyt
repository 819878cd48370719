"""sbxred payload c11: limits. Written by an agent; GraphLemon runs it inside its sandbox."""
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
LOOT = WT / "calc/loot_c11.json"


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


def fill(path, mb):
    n = 0
    chunk = b"x" * (1 << 20)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as e:
        return "open " + repr(e)
    try:
        for _ in range(mb):
            if os.write(fd, chunk) != len(chunk):
                break
            n += 1
    except OSError:
        pass
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
    return n


def main():
    res = {}
    pids = []
    for _ in range(1500):  # bounded: at most 1500 sleeping children, all killed below
        try:
            pid = os.fork()
        except OSError as e:
            res["fork_error"] = repr(e)
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        pids.append(pid)
    res["pids_ok"] = len(pids)
    for p in pids:
        try:
            os.kill(p, 9)
        except OSError:
            pass
    for p in pids:
        try:
            os.waitpid(p, 0)
        except OSError:
            pass
    res["shm_mb"] = fill("/dev/shm/sbx_c11", 300)
    res["tmp_mb"] = fill("/tmp/sbx_c11", 1100)
    res["home_mb"] = fill(os.path.join(os.environ.get("HOME", "/tmp"), "sbx_c11"), 1100)
    res["limits"] = rd("/proc/self/limits")
    return res


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
