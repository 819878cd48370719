"""journalred stream B: console HTTP cases. python cases_b.py CASE..."""
import sys, json, time, random, os, uuid
from collections import Counter
from jr import *

RES = f"{SCR}/results.ndjson"
def record(case, trial, verdict, **ev):
    r = dict(case=case, trial=trial, verdict=verdict, ts=time.strftime("%H:%M:%S"), **ev)
    open(RES, "a").write(json.dumps(r, default=str) + "\n"); log("RESULT", json.dumps(r, default=str)[:1500])

def launches(proj, task):
    return [r for r in records(proj, "launches.ndjson") if r.get("task_id") == task and r.get("event") == "started"]

def kill_pid(pid):
    try:
        if os.getpgid(pid) == pid: os.killpg(pid, 9)
        else: os.kill(pid, 9)
    except ProcessLookupError: pass

def stopped_task(name, at=None):
    proj = mkproj(name); p, t = start_run(proj, f"{name}-run")
    time.sleep(at or random.uniform(8, 20))
    rc, o, e = cli(["stop", t, "-p", proj]); wait_exit(p, 60)
    log(name, "stopped", rc, task_state(proj, t)[:2])
    return proj, t

def wait_settled(proj, t, timeout=120):
    """until no graphlemon process of t and the task is not running"""
    return wait_until(lambda: not procs_for(t) and task_state(proj, t)[0] in ("blocked_pending_human", "done", "abandoned"), timeout, 0.5)

def console_stop(pid, t, proj):
    s, b = act(pid, t, "stop", note="journalred", action_id=uuid.uuid4().hex)
    wait_settled(proj, t)
    return s, (b or {}).get("outcome")

def race_console(proj, t, action, same_id=False, n=20, cli_n=0, body=None):
    pid = pid_of(proj)
    before = len(launches(proj, t)); lbefore = Counter(r.get("event") for r in records(proj, "leases.ndjson", t))
    aid = uuid.uuid4().hex
    fns = [lambda i=i: act(pid, t, action, action_id=(aid if same_id else uuid.uuid4().hex), note="", **(body or {})) for i in range(n)]
    clis = []
    def c():
        q = spawn2([G, "resume", t, "-p", proj, "--engine", "direct"]); clis.append(q); return ("cli", q)
    fns += [c for _ in range(cli_n)]
    res = barrier_run(fns)
    time.sleep(6)
    # runner fix (after C07's first five trials): wait for the CLI starters to finish, all but a possible winner
    wait_until(lambda: sum(q.poll() is None for q in clis) <= 1, 120, 0.5)
    cliout = []
    for q in clis:
        if q.poll() is not None: cliout.append((q.returncode, q.stderr.read().decode(errors="replace")[-300:]))
    pr = procs_for(t); nl = len(launches(proj, t)) - before
    la = Counter(r.get("event") for r in records(proj, "leases.ndjson", t))
    http_res = [r for r in res if not (isinstance(r, tuple) and r[0] == "cli")]
    codes = Counter(r[0] for r in http_res)
    held = [r for r in http_res if r[0] == 409 and (r[1] or {}).get("error", {}).get("code") == "TASK_HELD"]
    named = [r for r in held if "since" in r[1]["error"].get("message", "")]
    repeated = [r for r in http_res if r[0] == 200 and (r[1] or {}).get("repeated")]
    ev = dict(codes=dict(codes), held=len(held), named=len(named), repeated=len(repeated), new_launches=nl, procs=pr,
              lease_delta={k: la[k] - lbefore.get(k, 0) for k in la if la[k] - lbefore.get(k, 0)}, cli=cliout,
              sample409=(held[0][1]["error"]["message"][:300] if held else None),
              other=[r for r in http_res if r[0] not in (200, 409)][:2])
    return pid, ev

def C03(): _race_cases("C03", same_id=False)
def C04(): _race_cases("C04", same_id=True)
def _race_cases(case, same_id):
    proj, t = stopped_task(case.lower())
    for k in range(1, 6):
        if task_state(proj, t)[0] == "done": record(case, k, "inconclusive", why="task done"); continue
        pid, ev = race_console(proj, t, "resume", same_id=same_id)
        if same_id:
            ok = ev["new_launches"] == 1 and len(ev["procs"]) <= 1 and ev["codes"].get(200, 0) >= 1 and ev["codes"].get(200, 0) + ev["held"] == 20
        else:
            ok = ev["new_launches"] == 1 and len(ev["procs"]) <= 1 and ev["codes"].get(200, 0) == 1 and ev["held"] == 19 and ev["named"] == 19
        time.sleep(random.uniform(0, 5))
        ev["stop"] = console_stop(pid, t, proj); ev["after"] = task_state(proj, t)[:2]
        record(case, k, "held" if ok else "FAILED", task=t, **ev)
    if task_state(proj, t)[0] != "done": run_to_end(proj, t, f"{case}-final")
    j = jcheck(proj, t, 0); record(case, "journal", "held" if not j["problems"] else "FAILED", task=t, journal=j)

def C07():
    proj, t = stopped_task("c07")
    for k in range(1, 6):
        if task_state(proj, t)[0] == "done": record("C07", k, "inconclusive", why="task done"); continue
        pid, ev = race_console(proj, t, "resume", n=10, cli_n=10)
        cli_ok = [c for c in ev["cli"] if c[0] == 1 and "TASK_HELD" in c[1]]
        holders = ev["codes"].get(200, 0) + (10 - len(cli_ok))
        ok = holders == 1 and len(ev["procs"]) == 1 and ev["lease_delta"].get("taken", 0) + ev["lease_delta"].get("taken_over", 0) == 1
        ev["holders"] = holders
        time.sleep(random.uniform(0, 5)); ev["stop"] = console_stop(pid, t, proj)
        record("C07", k, "held" if ok else "FAILED", task=t, **ev)
    if task_state(proj, t)[0] != "done": run_to_end(proj, t, "c07-final")
    j = jcheck(proj, t, 0); record("C07", "journal", "held" if not j["problems"] else "FAILED", task=t, journal=j)

def C08():
    proj, t = stopped_task("c08"); pid = pid_of(proj)
    for k, d in enumerate([0.3, 1, 3, 0.3, 1], 1):
        if task_state(proj, t)[0] == "done": record("C08", k, "inconclusive", why="task done"); continue
        r1 = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
        time.sleep(d)
        r2 = act(pid, t, "run", action_id=uuid.uuid4().hex)
        time.sleep(5); pr = procs_for(t)
        code2 = (r2[1] or {}).get("error", {}).get("code")
        ok = r1[0] == 200 and r2[0] == 409 and code2 in ("TASK_HELD", "INVALID_TRANSITION") and len(pr) <= 1
        ev = dict(delay=d, resume=r1[0], run=(r2[0], str(r2[1])[:300]), procs=pr)
        ev["stop"] = console_stop(pid, t, proj)
        record("C08", k, "held" if ok else "FAILED", task=t, **ev)

def C05():
    proj = mkproj("c05"); p, t = start_run(proj, "c05-run")
    time.sleep(random.uniform(8, 30)); killg(p); p.wait(); kills = 1
    for k in range(1, 6):
        if task_state(proj, t)[0] == "done": record("C05", k, "inconclusive", why="task done"); continue
        time.sleep(1)
        pid, ev = race_console(proj, t, "run")
        ok = ev["new_launches"] == 1 and len(ev["procs"]) == 1 and ev["codes"].get(200, 0) == 1 and ev["held"] == 19 and ev["named"] == 19
        time.sleep(random.uniform(0, 8))
        for lp, _ in procs_for(t): kill_pid(lp); kills += 1
        wait_until(lambda: not procs_for(t), 20)
        record("C05", k, "held" if ok else "FAILED", task=t, **ev)
    run_to_end(proj, t, "c05-final")
    j = jcheck(proj, t, kills); record("C05", "journal", "held" if not j["problems"] else "FAILED", task=t, kills=kills, journal=j)

def budget_count(proj, t):
    n = 0
    for f in os.listdir(f"{proj}/.graphlemon"):
        if f.endswith(".ndjson"):
            n += sum(1 for r in records(proj, f, t) if r.get("kind") == "budget")
    return n

def C06_C27(ntasks=3):
    for k in range(1, ntasks + 1):
        proj = mkproj(f"c06-{k}")
        p, t = start_run(proj, f"c06-{k}-run", extra=("--budget-tokens", "12000")); rc = wait_exit(p, 300)
        st = task_state(proj, t); pid = pid_of(proj)
        if st[1] != "budget_exceeded": record("C06", k, "inconclusive", why=f"did not block on budget: {st[:2]}"); continue
        # C27: console resume without raising -> blocks again
        if k == 1:
            s, b = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
            wait_settled(proj, t, 120); time.sleep(2)
            ri = runinfo(pid, t); la = (ri or {}).get("launch") or {}
            lid = la.get("launch_id"); logp = f"{proj}/.graphlemon/{la.get('log')}" if la.get("log") else None
            tb = file_has_tb(logp) if logp else None
            ok = s == 200 and la.get("state") == "ended" and tb is False and TB not in (la.get("log_tail") or "")
            record("C27", 1, "held" if ok else "FAILED", task=t, post=s, launch=dict((x, la.get(x)) for x in ("launch_id", "state", "returncode")), tb_log=tb, state=task_state(proj, t)[:2])
        b0 = budget_count(proj, t)
        _, ev = race_console(proj, t, "budget", body={"limit": 200000})
        b1 = budget_count(proj, t)
        ev["budget_records_added"] = b1 - b0
        ok = ev["new_launches"] == 1 and len(ev["procs"]) <= 1 and ev["codes"].get(200, 0) == 1 and ev["held"] == 19 and b1 - b0 == 1
        record("C06", k, "held" if ok else "FAILED", task=t, **ev)
        wait_settled(proj, t, 600)

def poll_run(pid, t, stop_at, until, extra=None):
    """poll /run every 0.2 s; returns list of (t, state, launch_state, launch_id, holder pid, stop_by)"""
    seq = []; t0 = time.time(); done_stop = False
    while time.time() - t0 < until():
        ri = runinfo(pid, t) or {}
        la = ri.get("launch") or {}; le = ri.get("lease") or {}
        seq.append((round(time.time() - t0, 1), ri.get("state"), ri.get("status"), la.get("launch_id"), la.get("state"), le.get("pid"), le.get("stop_requested_by")))
        if extra and not done_stop and time.time() - t0 > stop_at:
            extra(); done_stop = True
        if until.done(): break
        time.sleep(0.2)
    return seq

class Until:
    def __init__(s, total, proj, t): s.total, s.proj, s.t = total, proj, t; s.after = None
    def __call__(s): return s.total
    def done(s):
        st = task_state(s.proj, s.t)[0]
        if st in ("blocked_pending_human", "done", "abandoned") and not procs_for(s.t):
            if s.after is None: s.after = time.time()
            return time.time() - s.after > 2
        return False

def C16_C22(n=5):
    proj, t = stopped_task("c16")
    pid = pid_of(proj)
    for k in range(1, n + 1):
        if task_state(proj, t)[0] == "done": record("C16", k, "inconclusive", why="task done"); continue
        prev = (runinfo(pid, t) or {}).get("launch") or {}
        s, b = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
        my = (b or {}).get("launch", {}) if isinstance(b, dict) else {}
        at = random.uniform(5, 40); sres = {}
        def stop(): sres["r"] = act(pid, t, "stop", note="journalred C16", action_id=uuid.uuid4().hex)
        seq = poll_run(pid, t, at, Until(180, proj, t), stop)
        st = task_state(proj, t)
        la = [r for r in records(proj, "launches.ndjson") if r.get("task_id") == t and r.get("event") == "started"][-1]
        logp = f"{proj}/.graphlemon/{la['log']}"
        # C22: between POST answer and stop request, while the task works: never interrupted/None
        before_stop = [x for x in seq if x[0] < at]
        bad22 = [x for x in before_stop if x[1] not in ("running", "stopping") and x[2] not in ("blocked_pending_human", "done")]
        prevfailed = [x for x in seq if x[3] == prev.get("launch_id") and x[4] == "failed"]
        record("C22", k, "held" if (s == 200 and not bad22 and not prevfailed) else "FAILED", task=t, post=s, bad=bad22[:5], prev_launch=prev.get("launch_id"), prev_failed=prevfailed[:3], polls=len(seq), first=seq[:3])
        stopping = [x for x in seq if x[1] == "stopping"]
        lstate = seq[-1][4] if seq else None
        ok16 = st[:2] == ("blocked_pending_human", "stopped_by_person") and lstate == "ended" and not file_has_tb(logp) and (sres.get("r") or [0])[0] == 200
        record("C16", k, "held" if ok16 else "FAILED", task=t, stop_at=round(at, 1), stop_answer=str(sres.get("r"))[:300], stopping_polls=len(stopping), state=st[:2], launch_state=lstate, tb=file_has_tb(logp), tail=seq[-3:])
    if task_state(proj, t)[0] != "done": run_to_end(proj, t, "c16-final")
    j = jcheck(proj, t, 0); record("C16", "journal", "held" if not j["problems"] else "FAILED", task=t, journal=j)

def C23_C24(n=5):
    proj, t = stopped_task("c23"); pid = pid_of(proj)
    for k in range(1, n + 1):
        if task_state(proj, t)[0] == "done": record("C23", k, "inconclusive", why="task done"); continue
        q = resume(proj, t, f"c23-{k}")
        at = random.uniform(10, 40); sres = {}
        def stop():
            sres["rc"] = cli(["stop", t, "-p", proj, "--no-wait"])
            sres["status"] = status_json(proj); sres["run"] = runinfo(pid, t)
        seq = poll_run(pid, t, at, Until(180, proj, t), stop)
        wait_exit(q, 60)
        seen = [i for i, x in enumerate(seq) if x[1] == "running"]
        bad = []
        if seen:
            for x in seq[seen[0]:]:
                if x[0] >= at: break
                if x[1] not in ("running", "stopping") and x[2] not in ("blocked_pending_human", "done"): bad.append(x)
        record("C23", k, "held" if seen and not bad else "FAILED", task=t, bad=bad[:5], first_running=(seq[seen[0]][0] if seen else None), polls=len(seq))
        row = [x for x in (sres.get("status") or {}).get("tasks", []) if x.get("task_id") == t]
        lease = (row[0].get("lease") if row else None) or {}
        rr = sres.get("run") or {}
        st_after = task_state(proj, t)[:2]
        ok24 = (rr.get("state") == "stopping" or rr.get("status") == "blocked_pending_human") and (lease.get("stop_requested_by") or (row and row[0].get("status") == "blocked_pending_human"))
        record("C24", k, "held" if ok24 else "FAILED", task=t, stop_rc=(sres.get("rc") or [None])[0], console_state=rr.get("state"), console_status=rr.get("status"), status_lease=lease, status_run=(row[0].get("run") if row else None), final=st_after)

def C13():
    proj, t = stopped_task("c13"); pid = pid_of(proj)
    prev = ((runinfo(pid, t) or {}).get("launch") or {})
    s, b = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
    time.sleep(random.uniform(5, 40))
    pr = procs_for(t); [kill_pid(x) for x, _ in pr]
    time.sleep(3)
    ri = runinfo(pid, t) or {}
    s2, b2 = act(pid, t, "run", action_id=uuid.uuid4().hex)
    time.sleep(5); pr2 = procs_for(t)
    ok = ri.get("state") == "interrupted" and (ri.get("launch") or {}).get("state") == "failed" and s2 == 200 and len(pr2) == 1
    wait_settled(proj, t, 600)
    j = jcheck(proj, t, 1)
    ok = ok and not j["problems"]
    record("C13", 1, "held" if ok else "FAILED", task=t, killed=pr, after_kill=dict(state=ri.get("state"), launch=ri.get("launch", {}) and {k: ri["launch"].get(k) for k in ("launch_id", "state", "returncode")}), prev_launch=prev.get("launch_id"), run=(s2, str(b2)[:200]), procs=pr2, journal=j)

def C18(n=3):
    for k in range(1, n + 1):
        proj, t = stopped_task(f"c18-{k}"); pid = pid_of(proj)
        s, b = act(pid, t, "resume", note="", action_id=uuid.uuid4().hex)
        time.sleep(random.uniform(5, 50))
        s2, b2 = act(pid, t, "abandon", note="journalred C18", action_id=uuid.uuid4().hex)
        wait_settled(proj, t, 120); time.sleep(2)
        st = task_state(proj, t); ri = runinfo(pid, t) or {}
        la = [r for r in records(proj, "launches.ndjson") if r.get("task_id") == t and r.get("event") == "started"][-1]
        tb = file_has_tb(f"{proj}/.graphlemon/{la['log']}")
        ok = s2 == 200 and st[0] == "abandoned" and not procs_for(t) and (ri.get("launch") or {}).get("state") == "ended" and not tb
        record("C18", k, "held" if ok else "FAILED", task=t, abandon=(s2, str(b2)[:300]), state=st[:2], launch=(ri.get("launch") or {}).get("state"), tb=tb)

def C14(n=3):
    for k in range(1, n + 1):
        proj = mkproj(f"c14-{k}"); p, t = start_run(proj, f"c14-{k}-run"); pid = pid_of(proj)
        at = random.uniform(8, 60); seq = []; t0 = time.time(); killed = None
        while time.time() - t0 < at + 10:
            ri = runinfo(pid, t) or {}
            seq.append((round(time.time() - t0, 1), ri.get("state"), (ri.get("lease") or {}).get("pid"), alive(p.pid)))
            if killed is None and time.time() - t0 > at:
                killg(p); p.wait(); killed = time.time() - t0
            time.sleep(0.3)
        s = status_json(proj); row = [x for x in s.get("tasks", []) if x.get("task_id") == t]
        bad_alive = [x for x in seq if x[3] and x[0] > 3 and x[1] != "running"]
        bad_dead = [x for x in seq if killed and x[0] > killed + 3 and x[1] != "interrupted"]
        wrongpid = [x for x in seq if x[3] and x[1] == "running" and x[2] != p.pid]
        ok = not bad_alive and not bad_dead and not wrongpid and row and row[0].get("run") == "interrupted"
        record("C14", k, "held" if ok else "FAILED", task=t, killed_at=killed and round(killed, 1), bad_alive=bad_alive[:4], bad_dead=bad_dead[:4], wrongpid=wrongpid[:3], status_run=(row[0].get("run") if row else None))

if __name__ == "__main__":
    console_start(f"{SCR}/p0", 8877)
    log("console", CONSOLE["url"])
    try:
        for c in sys.argv[1:]:
            log("=== start", c)
            try: globals()[c]()
            except Exception as e:
                import traceback; record(c, "runner", "inconclusive", error=traceback.format_exc()[-1500:])
            log("=== end", c)
    finally:
        killg(CONSOLE["proc"])
