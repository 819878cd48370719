"""journalred POST-FREEZE P4: docs/devloop.md "a holder that dies before its safe point has its stop applied by the
waiter": start a direct run, `graphlemon stop T` (waiting) in the background, SIGKILL the run 1 s later.
Held when: the stop command exits 0, the task ends blocked_pending_human/stopped_by_person (not left interrupted),
no Traceback; then resume ends done with J allowance 1."""
import time, random, json
from jr import *
from cases_a import record
for k in range(1, 4):
    proj = mkproj(f"p4-{k}"); p, t = start_run(proj, f"p4-{k}-run")
    time.sleep(random.uniform(8, 40))
    s = spawn2([G, "stop", t, "-p", proj, "--note", "journalred P4"])
    wait_until(lambda: any(r.get("event") == "stop_requested" for r in records(proj, "leases.ndjson", t)), 30, 0.1)
    killg(p); p.wait()
    try: o, e = s.communicate(timeout=120)
    except Exception: killg(s); o, e = s.communicate()
    st = task_state(proj, t)
    out = (o + e).decode(errors="replace")
    ok1 = s.returncode == 0 and st[:2] == ("blocked_pending_human", "stopped_by_person") and TB not in out
    run_to_end(proj, t, f"p4-{k}-resume")
    j = jcheck(proj, t, 1)
    record("P4", k, "held" if ok1 and not j["problems"] else "FAILED", post_freeze=True, task=t, stop_rc=s.returncode, stop_out=out[-400:], state=st[:2], journal=j)
