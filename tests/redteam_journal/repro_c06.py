"""journalred: C06 reproduction with every answer kept (uses its own console)."""
import json, time, uuid, sys
from jr import *
from cases_b import budget_count, launches
console_start(f"{SCR}/p0", int(sys.argv[1]) if len(sys.argv) > 1 else 8870)
try:
    proj = mkproj("c06-repro")
    p, t = start_run(proj, "c06-repro-run", extra=("--budget-tokens", "12000")); wait_exit(p, 300)
    print("state", task_state(proj, t)[:2])
    pid = pid_of(proj); b0 = budget_count(proj, t); l0 = len(launches(proj, t))
    res = barrier_run([lambda i=i: act(pid, t, "budget", limit=200000 + i, action_id=uuid.uuid4().hex) for i in range(20)])
    time.sleep(8)
    for s, b in res:
        print(s, json.dumps(b)[:700] if isinstance(b, dict) else b)
    print("budget records added", budget_count(proj, t) - b0, "launches", len(launches(proj, t)) - l0, "procs", procs_for(t))
    rc, o, e = cli(["budget", "show", t, "-p", proj, "--json"]); print(o[-1500:])
    tl = [r for r in records(proj, "timeline.ndjson", t) if r.get("event") == "human_action"]
    print("human_action events", len(tl)); [print(" ", r.get("summary", "")[:200]) for r in tl[:20]]
    wait_until(lambda: not procs_for(t), 300)
finally:
    killg(CONSOLE["proc"])
