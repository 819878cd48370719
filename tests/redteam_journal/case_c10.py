"""journalred C10: 20 simultaneous deployment runs of one task (Prefect worker)."""
import sys, json, time, os, subprocess
from jr import *
from cases_c import api, flow_run, papi, logs_of, record

def main():
    base, _ = api()
    if not base:
        rc, o, e = cli(["server", "start"]); base, _ = api()
    env = dict(ENV, PREFECT_API_URL=base)
    pf = f"{WT}/.venv/bin/prefect"
    r1 = subprocess.run([pf, "work-pool", "create", "graphlemon", "--type", "process"], env=env, cwd=WT, capture_output=True, text=True)
    r2 = subprocess.run([pf, "--no-prompt", "deploy", "-n", "devloop"], env=env, cwd=WT, capture_output=True, text=True, timeout=600)
    log("C10 pool", r1.returncode, r1.stdout[-200:], r1.stderr[-200:]); log("C10 deploy", r2.returncode, r2.stdout[-400:], r2.stderr[-400:])
    proj = mkproj("c10"); p, t = start_run(proj, "c10-run", engine="direct")
    time.sleep(20); killg(p); p.wait()
    wenv = dict(env, GRAPHLEMON_PROJECT=proj)
    w = spawn([pf, "worker", "start", "--pool", "graphlemon"], f"{SCR}/out/c10-worker.out", env=wenv)
    try:
        code = f'''
import json
from prefect.deployments import run_deployment
ids = []
for i in range(20):
    fr = run_deployment("devloop/devloop", parameters={{"task_id": "{t}", "project": "{proj}", "executor": "scripted", "playbook": "{PB}", "goal": "Implement a snake game"}}, timeout=0)
    ids.append(str(fr.id))
print(json.dumps(ids))
'''
        r = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        ids = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else []
        log("C10 created", len(ids), r.stderr[-500:])
        t0 = time.time(); states = []
        while time.time() - t0 < 900:
            states = [flow_run(base, i)["state"] for i in ids]
            final = [s for s in states if s["type"] in ("COMPLETED", "CANCELLED", "FAILED", "CRASHED", "PAUSED")]
            if len(final) == len(ids) or (len(final) >= 19 and time.time() - t0 > 60): break
            time.sleep(10)
        from collections import Counter
        summ = Counter((s["type"], s["name"]) for s in states)
        refused = [s for s in states if s["name"] == "Refused"]
        named = [s for s in refused if "since" in (s.get("message") or "")]
        leases = Counter(x.get("event") for x in records(proj, "leases.ndjson", t))
        logs = logs_of(base, ids); tb = [l["message"][:300] for l in logs if TB in l.get("message", "")]
        working = [s for s in states if s["name"] not in ("Refused",)]
        ok = len(refused) == 19 and len(named) == 19 and len(working) == 1 and not tb
        record("C10", 1, "held" if ok else "FAILED", task=t, created=len(ids), states=dict((f"{a}/{b}", n) for (a, b), n in summ.items()),
               sample=(refused[0].get("message") if refused else None), leases=dict(leases), tb_logs=tb[:3], status=task_state(proj, t)[:2])
    finally:
        killg(w)
main()
