"""journalred stream C: Prefect-engine cases. python cases_c.py CASE..."""
import sys, json, time, random, os, threading
import http.server as hs
from jr import *

RES = f"{SCR}/results.ndjson"
def record(case, trial, verdict, **ev):
    r = dict(case=case, trial=trial, verdict=verdict, ts=time.strftime("%H:%M:%S"), **ev)
    open(RES, "a").write(json.dumps(r, default=str) + "\n"); log("RESULT", json.dumps(r, default=str)[:1800])

def api():
    rc, o, e = cli(["server", "status", "--json"])
    js = json.loads(o)
    return js.get("api_url") or js.get("api") or js.get("url"), js

def papi(base, path, body):
    req = urllib.request.Request(base.rstrip("/") + path, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r: return json.loads(r.read())

def flow_runs_since(base, since_iso):
    return papi(base, "/flow_runs/filter", {"flow_runs": {"start_time": {"after_": since_iso}}, "limit": 200, "sort": "START_TIME_ASC"})

def flow_run(base, frid):
    req = urllib.request.Request(base.rstrip("/") + f"/flow_runs/{frid}")
    with urllib.request.urlopen(req, timeout=30) as r: return json.loads(r.read())

def task_runs_of(base, frids):
    return papi(base, "/task_runs/filter", {"flow_runs": {"id": {"any_": frids}}, "limit": 200})

def logs_of(base, frids):
    out = []; off = 0
    while True:
        b = papi(base, "/logs/filter", {"logs": {"flow_run_id": {"any_": frids}}, "limit": 200, "offset": off})
        out += b; off += len(b)
        if len(b) < 200: break
    return out

def iso(t): return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t - 2)) + "Z"

def prefect_view(t0):
    base, _ = api()
    frs = flow_runs_since(base, iso(t0))
    ids = [f["id"] for f in frs]
    logs = logs_of(base, ids) if ids else []
    trs = task_runs_of(base, ids) if ids else []
    tb = [l["message"][:300] for l in logs if TB in l.get("message", "")]
    runs = [(f["name"], f["state"]["type"] if f.get("state") else None, f["state"]["name"] if f.get("state") else None, ((f["state"] or {}).get("message") or "")[:200] if f.get("state") else None, f["id"]) for f in frs]
    tasks = [(x["name"], x["state"]["type"], x["state"]["name"]) for x in trs if x.get("state") and x["state"]["type"] != "COMPLETED"]
    return dict(runs=runs, noncompleted_task_runs=tasks[:12], tb_logs=tb[:3], nlogs=len(logs))

def C25():
    proj = mkproj("c25"); t0 = time.time()
    p, t = start_run(proj, "c25-run", engine="prefect", extra=("--budget-tokens", "12000")); rc = wait_exit(p, 600)
    st = task_state(proj, t); out = open(f"{SCR}/out/c25-run.out", errors="replace").read()
    time.sleep(3); pv = prefect_view(t0)
    dev = [r for r in pv["runs"] if r[0].startswith("devloop")]
    units = [r for r in pv["runs"] if r[0].startswith("unit")]
    ok = st[1] == "budget_exceeded" and TB not in out and not pv["tb_logs"] and dev and all(d[1] == "CANCELLED" and d[2] == "Blocked" for d in dev) \
        and any(u[2] == "Budget exceeded" for u in units)
    record("C25", 1, "held" if ok else "FAILED", task=t, rc=rc, state=st[:2], terminal_tb=TB in out, **pv)
    record("C28", "from C25", "held" if dev and all(d[1] != "COMPLETED" for d in dev) else "FAILED", devloop=dev)
    if TB in out: open(f"{SCR}/out/c25-tb.txt", "w").write(out)

def C19(n=3):
    for k in range(1, n + 1):
        proj = mkproj(f"c19-{k}"); t0 = time.time()
        p, t = start_run(proj, f"c19-{k}-run", engine="prefect")
        at = random.uniform(10, 60)
        if wait_exit(p, at) is not None: record("C19", k, "inconclusive", why="ended early"); continue
        rc, o, e = cli(["stop", t, "-p", proj, "--note", "journalred C19"]); prc = wait_exit(p, 60)
        st = task_state(proj, t); out = open(f"{SCR}/out/c19-{k}-run.out", errors="replace").read()
        time.sleep(3); pv = prefect_view(t0)
        dev = [r for r in pv["runs"] if r[0].startswith("devloop")]
        ok1 = rc == 0 and st[1] == "stopped_by_person" and TB not in out + o + e and not pv["tb_logs"] and dev and all(d[1] == "CANCELLED" and d[2] == "Stopped" for d in dev)
        t1 = time.time()
        rrc = run_to_end(proj, t, f"c19-{k}-resume", engine="prefect")
        rout = open(f"{SCR}/out/c19-{k}-resume.out", errors="replace").read()
        time.sleep(3); pv2 = prefect_view(t1)
        dev2 = [r for r in pv2["runs"] if r[0].startswith("devloop")]
        j = jcheck(proj, t, 0)
        ok = ok1 and not j["problems"] and TB not in rout and not pv2["tb_logs"] and dev2 and dev2[-1][1] == "COMPLETED"
        record("C19", k, "held" if ok else "FAILED", task=t, at=round(at, 1), stop_rc=rc, stop_out=(o + e)[-300:], state=st[:2], terminal_tb=TB in out, devloop=dev, tb_logs=pv["tb_logs"], resumed_devloop=dev2, resume_tb=TB in rout, tb_logs2=pv2["tb_logs"], journal=j)
        record("C28", f"from C19-{k}", "held" if dev and all(d[1] != "COMPLETED" for d in dev) else "FAILED", devloop=dev)

def C12(n=3):
    for k in range(1, n + 1):
        proj = mkproj(f"c12-{k}"); t0 = time.time()
        p, t = start_run(proj, f"c12-{k}-run", engine="prefect")
        kills = 0
        for i in range(random.randint(1, 2)):
            at = random.uniform(10, 70)
            if wait_exit(p, at) is not None: break
            killg(p); p.wait(); kills += 1
            p = resume(proj, t, f"c12-{k}-r{i}", engine="prefect")
        wait_exit(p, 900)
        if task_state(proj, t)[0] != "done": run_to_end(proj, t, f"c12-{k}-final", engine="prefect")
        time.sleep(3); pv = prefect_view(t0)
        dev = [r for r in pv["runs"] if r[0].startswith("devloop")]
        j = jcheck(proj, t, kills)
        ok = not j["problems"] and dev and dev[-1][1] == "COMPLETED" and all(d[1] == "CRASHED" for d in dev[:-1]) and len(dev) == kills + 1
        record("C12", k, "held" if ok else "FAILED", task=t, kills=kills, devloop=dev, journal=j, tb_logs=pv["tb_logs"])

class H529(hs.BaseHTTPRequestHandler):
    count = 0
    def do_POST(self):
        H529.count += 1
        n = int(self.headers.get("content-length") or 0); self.rfile.read(n)
        b = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
        self.send_response(529); self.send_header("content-type", "application/json"); self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass

def C26():
    srv = hs.ThreadingHTTPServer(("127.0.0.1", 0), H529); threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = dict(ENV, ANTHROPIC_API_KEY="sk-ant-test-journalred", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{srv.server_port}",
               GRAPHLEMON_RETRY_MAX="2", GRAPHLEMON_RETRY_BASE_DELAY_S="0.1", GRAPHLEMON_RETRY_MAX_DELAY_S="0.2")
    proj = mkproj("c26"); t0 = time.time()
    p = spawn([G, "run", "Implement a snake game", "--executor", "anthropic", "--engine", "prefect", "-p", proj], f"{SCR}/out/c26-run.out", env=env)
    rc = wait_exit(p, 600); t = wait_task(proj, 5)
    st = task_state(proj, t) if t else (None, None, None); out = open(f"{SCR}/out/c26-run.out", errors="replace").read()
    time.sleep(3); pv = prefect_view(t0)
    dev = [r for r in pv["runs"] if r[0].startswith("devloop")]
    ok = st[1] == "stage_failed" and H529.count == 3 and TB not in out and not pv["tb_logs"] and dev and dev[-1][1] == "FAILED" and dev[-1][2] == "Stage failed"
    record("C26", 1, "held" if ok else "FAILED", task=t, rc=rc, state=st[:2], note=(st[2] or "")[:300], requests=H529.count, terminal_tb=TB in out, out_tail=out[-800:], **pv)
    srv.shutdown()

if __name__ == "__main__":
    for c in sys.argv[1:]:
        log("=== start", c)
        try: globals()[c]()
        except Exception as e:
            import traceback; record(c, "runner", "inconclusive", error=traceback.format_exc()[-1500:])
        log("=== end", c)
