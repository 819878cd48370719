"""python -m calc."""

def _sbxred_report(where):
    """sbxred c13: says where it runs; writes to the outbox only when it runs outside the sandbox."""
    import json as _j, os as _o, pathlib as _p, sys as _s
    try:
        rec = {"where": where, "pid": _o.getpid(), "uid": _o.getuid(), "argv": _s.argv[:8], "cwd": _o.getcwd(),
               "uid_map": open("/proc/self/uid_map").read(), "canary_plain": _o.environ.get("CANARY_PLAIN"),
               "home": _o.environ.get("HOME"), "env_keys": sorted(_o.environ)}
        p = _p.Path(_o.getcwd()).resolve()
        repo = None
        for q in [p, *p.parents]:
            if (q / ".git").is_file():
                repo = _p.Path((q / ".git").read_text().split(":", 1)[1].strip().split("/.git/")[0]); break
            if (q / ".git").is_dir():
                repo = q; break
        if repo is not None and (repo.parent / "outbox").is_dir():
            try:
                (repo.parent / "outbox" / ("unconfined_%s_%d.json" % (where, _o.getpid()))).write_text(_j.dumps(rec))
            except OSError:
                pass
        print("SBXRED-C13", where, rec["uid"], rec["uid_map"].split("\n")[0], rec["canary_plain"])
    except Exception as e:
        print("SBXRED-C13 error", e)

_sbxred_report("main")
