"""journalred runner helpers (not collected by pytest)."""
import json, os, random, signal, subprocess, sys, threading, time, urllib.request, urllib.error, uuid, shutil

WT = "/work/wt/journalred"
G = f"{WT}/.venv/bin/graphlemon"
PY = f"{WT}/.venv/bin/python"
SCR = "/work/redteam/journal"
PB = f"{SCR}/pb/playbook.yaml"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "journalredtoken0123456789"
ENV = dict(os.environ, GRAPHLEMON_TEST_CONFINEMENT="auto", GRAPHLEMON_CONFIG_DIR=f"{SCR}/config",
           GRAPHLEMON_CONSOLE_TOKEN=TOKEN, COLUMNS="160")
TB = "Traceback (most recent call last)"
LOG = open(f"{SCR}/runner.log", "a")

def log(*a):
    s = time.strftime("%H:%M:%S ") + " ".join(str(x) for x in a)
    print(s, flush=True); LOG.write(s + "\n"); LOG.flush()

def mkproj(name):
    d = f"{SCR}/projects/{name}"
    shutil.rmtree(d, ignore_errors=True); os.makedirs(os.path.dirname(d), exist_ok=True)
    shutil.copytree(f"{WT}/examples/snake/repo", d)
    subprocess.run(f"git init -q -b main && git add -A && git -c user.name=r -c user.email=r@x commit -qm start", shell=True, cwd=d, check=True)
    subprocess.run([G, "init", d], env=ENV, check=True, capture_output=True)
    return d

def spawn(args, out, env=None):
    f = open(out, "wb")
    return subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, env=env or ENV, start_new_session=True)

def spawn2(args, env=None):
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or ENV, start_new_session=True)

def killg(p_or_pid):
    pid = p_or_pid if isinstance(p_or_pid, int) else p_or_pid.pid
    try: os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError: pass
    except PermissionError: pass

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f: st = f.read().split(")")[-1].split()[0]
        return st != "Z"
    except FileNotFoundError:
        return False

def records(proj, name, task=None):
    p = f"{proj}/.graphlemon/{name}"
    out = []
    if os.path.exists(p):
        for line in open(p):
            line = line.strip()
            if line:
                try: r = json.loads(line)
                except Exception: continue
                if task is None or r.get("task_id") == task: out.append(r)
    return out

def task_state(proj, task):
    ts = records(proj, "tasks.ndjson", task)
    return (ts[-1].get("status"), ts[-1].get("blocked_reason"), ts[-1].get("note")) if ts else (None, None, None)

def wait_task(proj, timeout=60, known=()):
    t0 = time.time()
    while time.time() - t0 < timeout:
        for r in records(proj, "tasks.ndjson"):
            if r.get("task_id") and r["task_id"] not in known: return r["task_id"]
        time.sleep(0.3)
    return None

def start_run(proj, tag, engine="direct", extra=()):
    known = {r.get("task_id") for r in records(proj, "tasks.ndjson")}
    p = spawn([G, "run", "Implement a snake game", "--playbook", PB, "--engine", engine, "-p", proj, *extra], f"{SCR}/out/{tag}.out")
    t = wait_task(proj, 120, known)
    return p, t

def resume(proj, task, tag, engine="direct", note=None):
    a = [G, "resume", task, "-p", proj, "--engine", engine]
    if note: a += ["--note", note]
    return spawn(a, f"{SCR}/out/{tag}.out")

def cli(args, timeout=900):
    r = subprocess.run([G, *args], env=ENV, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr

def status_json(proj):
    rc, o, e = cli(["status", "-p", proj, "--json"])
    try: return json.loads(o)
    except Exception: return {"_raw": o + e}

def jcheck(proj, task, allow):
    r = subprocess.run([PY, f"{HERE}/journal_check.py", proj, task, "--baseline", f"{HERE}/baseline.json", "--allow", str(allow)], capture_output=True, text=True)
    try: return json.loads(r.stdout)
    except Exception: return {"problems": ["journal_check crashed: " + r.stdout + r.stderr]}

def wait_exit(p, timeout):
    try: return p.wait(timeout)
    except subprocess.TimeoutExpired: return None

def wait_until(fn, timeout, step=0.3):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v: return v
        time.sleep(step)
    return None

def run_to_end(proj, task, tag, engine="direct", timeout=900):
    """resume until the task is done (or a non-stop block); returns last rc."""
    p = resume(proj, task, tag, engine)
    rc = wait_exit(p, timeout)
    if rc is None: killg(p)
    return rc

def file_has_tb(path):
    try: return TB in open(path, errors="replace").read()
    except FileNotFoundError: return False

# ---------------- console ----------------
CONSOLE = {"url": None, "proc": None}

def console_start(proj, port=8877):
    p = spawn([G, "console", "-p", proj, "--port", str(port)], f"{SCR}/out/console-{port}.out")
    CONSOLE["proc"] = p
    def url():
        try: return [l for l in open(f"{SCR}/out/console-{port}.out") if "GraphLemon console:" in l]
        except FileNotFoundError: return None
    ls = wait_until(url, 60)
    u = ls[-1].split("console:")[1].strip().split("/?")[0]
    CONSOLE["url"] = u
    return u

def http(method, path, body=None, timeout=60):
    u = CONSOLE["url"] + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(u, data=data, method=method, headers={
        "X-GraphLemon-Token": TOKEN, "Origin": CONSOLE["url"], "Content-Type": "application/json",
        "Cookie": f"graphlemon_console={TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r: return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        try: return e.code, json.loads(e.read() or b"null")
        except Exception: return e.code, None
    except Exception as e:
        return -1, {"exc": repr(e)}

def pid_of(proj):
    st, js = http("GET", "/api/projects")
    for p in js:
        if p["root"] == proj: return p["project_id"]

def runinfo(pid, task):
    return http("GET", f"/api/projects/{pid}/tasks/{task}/run", timeout=20)[1]

def act(pid, task, action, **body):
    return http("POST", f"/api/projects/{pid}/tasks/{task}/{action}", body)

def procs_for(task, words=("resume", "run")):
    """live graphlemon processes whose argv names the task"""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit(): continue
        try:
            a = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        except Exception: continue
        a = [x.decode(errors="replace") for x in a if x]
        if any("graphlemon" in x for x in a[:3]) and task in a and any(w in a for w in words) and alive(int(d)):
            out.append((int(d), " ".join(a[:4])))
    return out

def barrier_run(fns):
    """run each fn in its own thread, all released at once; returns results in order"""
    res = [None] * len(fns); ev = threading.Event()
    def w(i, f):
        ev.wait(); res[i] = f()
    ts = [threading.Thread(target=w, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts: t.start()
    time.sleep(0.2); ev.set()
    for t in ts: t.join()
    return res
