"""journalred POST-FREEZE cases (added after the freeze, reported apart).
P1: console POST resume then POST stop at once (the lease is the console's, handed to a process not yet adopted): the
    launched run must honour the stop: task ends blocked stopped_by_person, no run to done, one process at most.
P2: same with POST abandon at once: task ends abandoned, no process left.
P3: SIGKILL the console 0.3 s after POST resume: no double run; the task is either run by the launched process or
    `interrupted` and resumable; `graphlemon resume` then ends done with J allowance 1."""
import sys, json, time, uuid, random
from jr import *
from cases_b import stopped_task, launches, record, wait_settled, console_stop

def P12(action, case, n=5):
    proj, t = stopped_task(case.lower()); pid = pid_of(proj)
    for k in range(1, n + 1):
        if task_state(proj, t)[0] in ("done", "abandoned"): break
        a = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
        time.sleep(random.choice([0, 0.05, 0.2]))
        b = act(pid, t, action, note=f"journalred {case}", action_id=uuid.uuid4().hex)
        wait_settled(proj, t, 180); time.sleep(2)
        st = task_state(proj, t)
        la = [r for r in records(proj, "launches.ndjson") if r.get("task_id") == t and r.get("event") == "started"]
        tb = file_has_tb(f"{proj}/.graphlemon/{la[-1]['log']}") if la else None
        want = ("blocked_pending_human", "stopped_by_person") if action == "stop" else ("abandoned", None)
        ok = st[:2] == want and not procs_for(t) and not tb
        record(case, k, "held" if ok else "FAILED", post_freeze=True, task=t, resume=a[0], second=(b[0], str(b[1])[:250]), state=st[:2], tb=tb)

def P3(n=3):
    for k in range(1, n + 1):
        console_start(f"{SCR}/p0", 8890 + k)
        proj, t = stopped_task(f"p3-{k}"); pid = pid_of(proj)
        a = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
        time.sleep(0.3); killg(CONSOLE["proc"]); CONSOLE["proc"].wait()
        time.sleep(15)
        pr = procs_for(t); s = status_json(proj)
        row = [x for x in s.get("tasks", []) if x.get("task_id") == t]
        run = row[0].get("run") if row else None
        wait_settled(proj, t, 600)
        st = task_state(proj, t)
        if st[0] != "done":
            rc = run_to_end(proj, t, f"p3-{k}-final")
        j = jcheck(proj, t, 1)
        ok = len(pr) <= 1 and (len(pr) == 1 or run == "interrupted" or st[0] != "blocked_pending_human") and not j["problems"]
        record("P3", k, "held" if ok else "FAILED", post_freeze=True, task=t, resume=a[0], procs_15s=pr, status_run_15s=run, state_after=st[:2], journal=j)

if __name__ == "__main__":
    try:
        if "P1" in sys.argv or "P2" in sys.argv:
            console_start(f"{SCR}/p0", 8880)
        if "P1" in sys.argv: P12("stop", "P1")
        if "P2" in sys.argv: P12("abandon", "P2", 3)
        if CONSOLE["proc"]: killg(CONSOLE["proc"])
        if "P3" in sys.argv: P3()
    finally:
        if CONSOLE["proc"]: killg(CONSOLE["proc"])
