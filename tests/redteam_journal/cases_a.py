"""journalred stream A: CLI lease / kill / stop / abandon cases. python cases_a.py CASE..."""
import sys, json, time, random, os
from jr import *

RES = f"{SCR}/results.ndjson"
def record(case, trial, verdict, **ev):
    r = dict(case=case, trial=trial, verdict=verdict, ts=time.strftime("%H:%M:%S"), **ev)
    open(RES, "a").write(json.dumps(r, default=str) + "\n"); log("RESULT", json.dumps(r, default=str)[:1500])

def lease_counts(proj, task):
    from collections import Counter
    return Counter(r.get("event") for r in records(proj, "leases.ndjson", task))

def race20_cli(proj, task, tag, n=20):
    before = lease_counts(proj, task)
    procs = barrier_run([lambda i=i: spawn2([G, "resume", task, "-p", proj, "--engine", "direct"]) for i in range(n)])
    t0 = time.time(); done = {}
    while time.time() - t0 < 90:
        for i, p in enumerate(procs):
            if i not in done and p.poll() is not None:
                done[i] = (p.returncode, p.stderr.read().decode(errors="replace"))
        if len(done) >= n - 1: break
        time.sleep(0.3)
    time.sleep(2)
    for i, p in enumerate(procs):
        if i not in done and p.poll() is not None: done[i] = (p.returncode, p.stderr.read().decode(errors="replace"))
    running = [p for i, p in enumerate(procs) if i not in done]
    after = lease_counts(proj, task)
    delta = {k: after[k] - before.get(k, 0) for k in after}
    refused = [v for v in done.values() if v[0] == 1 and "TASK_HELD" in v[1]]
    winpid = running[0].pid if len(running) == 1 else None
    named = [v for v in refused if winpid and f"pid {winpid}" in v[1] and "since" in v[1]]
    other = [v for v in done.values() if not (v[0] == 1 and "TASK_HELD" in v[1])]
    ok = len(running) == 1 and len(refused) == n - 1 and len(named) == n - 1 and delta.get("taken", 0) + delta.get("taken_over", 0) == 1 and delta.get("refused", 0) == n - 1
    ev = dict(running=len(running), refused=len(refused), named_winner=len(named), lease_delta=delta,
              other=[(rc, e[-300:]) for rc, e in other][:3], sample=(refused[0][1][-400:] if refused else None))
    return ok, ev, running

def C01():
    proj = mkproj("c01"); p, t = start_run(proj, "c01-run")
    time.sleep(random.uniform(10, 60)); killg(p); p.wait(); kills = 1
    for trial in range(1, 7):
        ok, ev, running = race20_cli(proj, t, f"c01-{trial}")
        record("C01", trial, "held" if ok else "FAILED", task=t, **ev)
        if trial < 6:
            time.sleep(random.uniform(0, 10))
            for r in running: killg(r); r.wait()
            kills += len(running)
        else:
            for r in running: r.wait(900)
    for q in running: 
        if q.poll() is None: killg(q)
    st = task_state(proj, t)
    if st[0] != "done":
        run_to_end(proj, t, "c01-final")
    j = jcheck(proj, t, kills)
    record("C01", "journal", "held" if not j["problems"] else "FAILED", task=t, kills=kills, journal=j)

def C02():
    proj = mkproj("c02"); p, t = start_run(proj, "c02-run")
    time.sleep(random.uniform(8, 30))
    rc, o, e = cli(["stop", t, "-p", proj]); wait_exit(p, 60)
    log("C02 initial stop", rc, o[-300:], e[-300:], task_state(proj, t)[:2])
    for trial in range(1, 6):
        if task_state(proj, t)[0] == "done": break
        ok, ev, running = race20_cli(proj, t, f"c02-{trial}")
        time.sleep(random.uniform(0, 8))
        rc, o, e = cli(["stop", t, "-p", proj])
        for r in running: wait_exit(r, 60)
        st = task_state(proj, t)
        ev.update(stop_rc=rc, after_stop=st[:2])
        ok2 = ok and (st[1] == "stopped_by_person" or st[0] == "done")
        record("C02", trial, "held" if ok2 else "FAILED", task=t, **ev)
    if task_state(proj, t)[0] != "done": run_to_end(proj, t, "c02-final")
    j = jcheck(proj, t, 0)
    record("C02", "journal", "held" if not j["problems"] else "FAILED", task=t, journal=j)

def C11(ntasks=5):
    for k in range(ntasks):
        proj = mkproj(f"c11-{k}"); p, t = start_run(proj, f"c11-{k}-run")
        nk = random.randint(1, 3); kills = 0; ev = dict(task=t, points=[], status_after_kill=[], resume_refused=[])
        for i in range(nk):
            at = random.uniform(3, 90 if i == 0 else 60)
            if wait_exit(p, at) is not None: break
            killg(p); p.wait(); kills += 1; ev["points"].append(round(at, 1))
            s = status_json(proj)
            row = [x for x in s.get("tasks", []) if x.get("task_id") == t] if isinstance(s, dict) else []
            ev["status_after_kill"].append(row[0].get("run") if row else ("?", str(s)[:200]))
            p = resume(proj, t, f"c11-{k}-r{i}")
        rc = wait_exit(p, 900)
        out = open(f"{SCR}/out/c11-{k}-r{kills-1}.out" if kills else f"{SCR}/out/c11-{k}-run.out", errors="replace").read()
        if "TASK_HELD" in out: ev["resume_refused"].append(out[-300:])
        if task_state(proj, t)[0] != "done": run_to_end(proj, t, f"c11-{k}-final")
        j = jcheck(proj, t, kills)
        ok = not j["problems"] and all(x == "interrupted" for x in ev["status_after_kill"]) and not ev["resume_refused"]
        record("C11", k + 1, "held" if ok else "FAILED", kills=kills, journal=j, **ev)

def stop_trial(case, k, how="stop"):
    proj = mkproj(f"{case.lower()}-{k}"); p, t = start_run(proj, f"{case.lower()}-{k}-run")
    at = random.uniform(3, 90); 
    if wait_exit(p, at) is not None:
        return record(case, k, "inconclusive", why="run ended before the stop point", at=at)
    args = [how, t, "-p", proj, "--note", f"journalred {case}"]
    rc, o, e = cli(args)
    t_stop = time.time(); prc = wait_exit(p, 30)
    st = task_state(proj, t)
    runout = open(f"{SCR}/out/{case.lower()}-{k}-run.out", errors="replace").read()
    ev = dict(task=t, at=round(at, 1), cmd_rc=rc, cmd_out=(o + e)[-500:], run_exit=prc, state=st[:2], note=(st[2] or "")[:300],
              tb_run=TB in runout, tb_cmd=TB in (o + e), run_tail=runout[-600:])
    return proj, t, ev

def C15(n=6):
    for k in range(1, n + 1):
        r = stop_trial("C15", k)
        if not isinstance(r, tuple): continue
        proj, t, ev = r
        ok = ev["cmd_rc"] == 0 and ev["run_exit"] is not None and ev["state"] == ("blocked_pending_human", "stopped_by_person") and not ev["tb_run"] and not ev["tb_cmd"]
        rc = run_to_end(proj, t, f"c15-{k}-resume")
        ev["resume_tb"] = file_has_tb(f"{SCR}/out/c15-{k}-resume.out")
        j = jcheck(proj, t, 0); ev["journal"] = j
        ok = ok and not j["problems"] and not ev["resume_tb"]
        record("C15", k, "held" if ok else "FAILED", **ev)

def C17(n=5):
    for k in range(1, n + 1):
        r = stop_trial("C17", k, "abandon")
        if not isinstance(r, tuple): continue
        proj, t, ev = r
        rc, o, e = cli(["resume", t, "-p", proj, "--engine", "direct"])
        time.sleep(1); left = procs_for(t)
        ev.update(resume_rc=rc, resume_err=(o + e)[-300:], procs_after=left)
        ok = ev["cmd_rc"] == 0 and ev["run_exit"] is not None and ev["state"][0] == "abandoned" and not ev["tb_run"] and not ev["tb_cmd"] and rc != 0 and "INVALID_TRANSITION" in (o + e) and not left
        record("C17", k, "held" if ok else "FAILED", **ev)

def C20(n=3):
    for k in range(1, n + 1):
        proj = mkproj(f"c20-{k}"); p, t = start_run(proj, f"c20-{k}-run")
        at = random.uniform(5, 60)
        if wait_exit(p, at) is not None: record("C20", k, "inconclusive", why="ended early"); continue
        r1 = cli(["stop", t, "-p", proj, "--no-wait"]); r2 = cli(["abandon", t, "-p", proj])
        prc = wait_exit(p, 60); st = task_state(proj, t)
        runout = open(f"{SCR}/out/c20-{k}-run.out", errors="replace").read()
        ev = dict(task=t, at=round(at, 1), stop=(r1[0], (r1[1] + r1[2])[-200:]), abandon=(r2[0], (r2[1] + r2[2])[-300:]), run_exit=prc, state=st[:2], tb=TB in runout + r1[1] + r1[2] + r2[1] + r2[2])
        ok = st[0] == "abandoned" and r1[0] == 0 and r2[0] == 0 and not ev["tb"] and prc is not None
        record("C20", k, "held" if ok else "FAILED", **ev)

def C21(n=3):
    for k in range(1, n + 1):
        proj = mkproj(f"c21-{k}"); p, t = start_run(proj, f"c21-{k}-run")
        at = random.uniform(5, 60)
        if wait_exit(p, at) is not None: record("C21", k, "inconclusive", why="ended early"); continue
        rs = barrier_run([lambda: cli(["stop", t, "-p", proj, "--note", "a"]), lambda: cli(["stop", t, "-p", proj, "--note", "b"])])
        prc = wait_exit(p, 60); st = task_state(proj, t)
        tl = records(proj, "timeline.ndjson", t)
        esc = [x for x in tl if x.get("event") == "escalated"]
        sr = [x for x in records(proj, "leases.ndjson", t) if x.get("event") == "stop_requested"]
        ev = dict(task=t, at=round(at, 1), stops=[(r[0], (r[1] + r[2])[-250:]) for r in rs], state=st[:2], escalated=len(esc), stop_requested=len(sr), run_exit=prc)
        ok = all(r[0] == 0 for r in rs) and st == (*st[:2], st[2]) and st[1] == "stopped_by_person" and len(esc) == 1
        record("C21", k, "held" if ok else "FAILED", **ev)

if __name__ == "__main__":
    for c in sys.argv[1:]:
        log("=== start", c)
        try: globals()[c]()
        except Exception as e:
            import traceback; record(c, "runner", "inconclusive", error=traceback.format_exc()[-1500:])
        log("=== end", c)
