"""journalred: journal check J(task) against a baseline. Usage: journal_check.py PROJECT TASK [--allow N] [--baseline-from PROJECT:TASK] [--save-baseline FILE] [--baseline FILE]"""
import json, sys, os, collections, argparse

def load(proj, name):
    p = os.path.join(proj, ".graphlemon", name)
    out = []
    if os.path.exists(p):
        for line in open(p):
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out

def summary(proj, task):
    outs = [r for r in load(proj, "outcomes.ndjson") if r.get("task_id") == task]
    keys = [(r["node_exec_id"].replace(task, "T"), r["name"]) for r in outs]
    usage = [r for r in load(proj, "usage.ndjson") if r.get("task_id") == task]
    tl = [r for r in load(proj, "timeline.ndjson") if r.get("task_id") == task]
    tasks = [r for r in load(proj, "tasks.ndjson") if r.get("task_id") == task]
    leases = [r for r in load(proj, "leases.ndjson") if r.get("task_id") == task]
    tok = sum(u.get("input_tokens", 0) + u.get("output_tokens", 0) + u.get("cache_read_tokens", 0) + u.get("cache_write_tokens", 0) for u in usage)
    return dict(keys=keys, ncalls=len(usage), tokens=tok, call_ids=[u.get("call_id") for u in usage],
                events=collections.Counter(r.get("event") for r in tl),
                status=(tasks[-1].get("status") if tasks else None), blocked_reason=(tasks[-1].get("blocked_reason") if tasks else None),
                lease_events=collections.Counter(r.get("event") for r in leases), leases=leases)

def check(proj, task, base, allow):
    s = summary(proj, task)
    problems = []
    if s["status"] != "done": problems.append(f"status {s['status']} ({s['blocked_reason']})")
    dup = [k for k, n in collections.Counter(s["keys"]).items() if n > 1]
    if dup: problems.append(f"duplicate outcome keys: {dup}")
    bk = set(map(tuple, base["keys"]))
    if set(s["keys"]) != bk:
        problems.append(f"outcome keys differ: missing {sorted(bk - set(s['keys']))} extra {sorted(set(s['keys']) - bk)}")
    dc = [k for k, n in collections.Counter(s["call_ids"]).items() if n > 1]
    if dc: problems.append(f"duplicate usage call_ids {dc}")
    if s["events"].get("done", 0) != 1: problems.append(f"done events {s['events'].get('done', 0)}")
    if s["tokens"] < base["tokens"]: problems.append(f"tokens {s['tokens']} < baseline {base['tokens']} (lost work?)")
    if s["ncalls"] > base["ncalls"] + allow: problems.append(f"usage calls {s['ncalls']} > baseline {base['ncalls']} + allowance {allow}")
    # lease overlap: a 'taken' (not taken_over) while a previous lease was not released
    open_l = None
    for r in s["leases"]:
        ev = r.get("event")
        if ev == "taken":
            if open_l is not None: problems.append(f"lease {r['lease_id']} taken while {open_l} not released")
            open_l = r["lease_id"]
        elif ev == "taken_over":
            open_l = r["lease_id"]
        elif ev == "released" and r.get("lease_id") == open_l:
            open_l = None
    return s, problems

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("project"); ap.add_argument("task")
    ap.add_argument("--allow", type=int, default=0)
    ap.add_argument("--baseline"); ap.add_argument("--save-baseline")
    a = ap.parse_args()
    if a.save_baseline:
        s = summary(a.project, a.task)
        json.dump(dict(keys=s["keys"], ncalls=s["ncalls"], tokens=s["tokens"], events=s["events"]), open(a.save_baseline, "w"), indent=1)
        print("baseline", s["ncalls"], s["tokens"], len(s["keys"]), dict(s["events"])); sys.exit(0)
    base = json.load(open(a.baseline))
    s, problems = check(a.project, a.task, base, a.allow)
    print(json.dumps(dict(task=a.task, status=s["status"], reason=s["blocked_reason"], ncalls=s["ncalls"], tokens=s["tokens"],
                          base_calls=base["ncalls"], base_tokens=base["tokens"], lease_events=s["lease_events"], problems=problems)))
    sys.exit(1 if problems else 0)
