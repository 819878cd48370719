"""remotered's runner: `python tests/redteam_remote/run.py C01 [C02 …]` runs each case on a fresh stack
(stack.py) under /tmp/rr/<case>, prints the evidence and writes it to tests/redteam_remote/results/<case>.json.
Verdicts are given by the runner from the frozen criteria where they are mechanical; the evidence is kept."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[0]), str(HERE.parents[0] / "scale")]
from stack import BIN, ROOT, Stack, sh  # noqa: E402

OUT = HERE / "results"
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def now() -> datetime:
    return datetime.now(timezone.utc)


def ts(d) -> str:
    return d.isoformat() if d else None


def run_info(r) -> dict:
    return {"id": str(r.id), "name": r.name, "type": r.state.type.value if r.state else None,
            "state": r.state.name if r.state else None, "message": (r.state.message or "")[:600] if r.state else "",
            "created": ts(r.created), "start": ts(r.start_time), "end": ts(r.end_time),
            "infra_pid": r.infrastructure_pid, "tags": list(r.tags or [])}  # fmt: skip


def wait_for(pred, timeout, step=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(step)
    return None


def running_unit(s: Stack, min_running_s: float = 2.0):
    for r in s.unit_runs():
        if r.state and r.state.type.value == "RUNNING" and r.start_time:
            if (now() - r.start_time).total_seconds() >= min_running_s:
                return r
    return None


def pid_of_run(r) -> int | None:
    pid = r.infrastructure_pid
    if pid and ":" in str(pid):
        pid = str(pid).rsplit(":", 1)[1]
    try:
        return int(pid) if pid else None
    except ValueError:
        return None


def find_engine_pid(run_id: str) -> int | None:
    """The process whose environment names this flow run (the flow run's own process on the worker)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if f"PREFECT__FLOW_RUN_ID={run_id}".encode() in env:
            return int(d.name)
    return None


def worker_of(s: Stack, pid: int) -> str | None:
    """The worker (name) whose process tree holds pid."""
    pgid = os.getpgid(pid)
    for name, proc in s.procs.items():
        if name.startswith("w") and proc.pid == pgid:
            return name
    p = pid
    while p > 1:
        for name, proc in s.procs.items():
            if name.startswith("w") and proc.pid == p:
                return name
        try:
            p = int((Path(f"/proc/{p}/stat").read_text().split(")")[1].split()[1]))
        except OSError:
            return None
    return None


def wait_devloop(s: Stack, name="devloop", timeout=600) -> dict:
    proc = s.procs[name]
    t0 = time.monotonic()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return {"returned": False, "waited_s": timeout}
    log = (s.base / f"{name}.log").read_text()
    result = [line for line in log.splitlines() if line.startswith("RESULT")]
    return {"returned": True, "rc": proc.returncode, "waited_s": round(time.monotonic() - t0, 1),
            "result": result[-1][:800] if result else None, "traceback": "Traceback" in log}  # fmt: skip


def task_status(s: Stack) -> dict:
    st = s.status()
    tasks = st.get("tasks", [])
    if not tasks:
        return {"raw": str(st)[:1000]}
    t = tasks[-1]
    return {k: t.get(k) for k in ("task_id", "status", "blocked_reason", "loop_round", "resume_status", "note")}


def units_summary(s: Stack) -> list[dict]:
    return [run_info(r) for r in sorted(s.unit_runs(), key=lambda r: r.created)]


def ledger_dups(s: Stack) -> dict:
    out = {}
    for path in sorted((s.proj / ".graphlemon").glob("*.ndjson")):
        c = Counter(path.read_text().splitlines())
        d = {k[:200]: v for k, v in c.items() if v > 1}
        if d:
            out[path.name] = d
    return out


def compare_with_direct(s: Stack) -> dict:
    """The same goal with --engine direct on a copy of the project's start, ledgers compared as multisets."""
    direct = s.base / "direct"
    shutil.copytree(ROOT / "examples" / "snake" / "repo", direct)
    g = ["git", "-C", str(direct)]
    sh([*g, "init", "-q", "-b", "main"], s.env)
    sh([*g, "add", "-A"], s.env)
    sh([*g, "-c", "user.name=R", "-c", "user.email=r@example.com", "commit", "-qm", "start"], s.env)
    sh([str(BIN / "graphlemon"), "init", str(direct)], s.env)
    p = sh([str(BIN / "graphlemon"), "run", "Implement a snake game", "--engine", "direct", "--playbook",
            str(s.playbook), "-p", str(direct), "--quiet"], s.env, cwd=s.base, check=False, timeout=900)  # fmt: skip
    return diff_ledgers(direct / ".graphlemon", s.proj / ".graphlemon") | {"direct_rc": p.returncode}


def diff_ledgers(da: Path, db: Path) -> dict:
    """Multiset difference of two ledgers (scale_kit.ledger_view), bug ids normalised too: a bug id carries the
    minute it was filed (bug-<date>-<HHMM>-<4 hex>), which two runs never share (runner fix after C01's first run)."""
    import re

    from scale_kit import ledger_view

    def norm(view):
        return {n: Counter({re.sub(r"bug-<id>-\d{4}-[0-9a-f]{4}", "bug-X", k): v for k, v in c.items()})
                for n, c in view.items()}  # fmt: skip

    a, b = norm(ledger_view(da)), norm(ledger_view(db))
    lost, extra = {}, {}
    for name in sorted(set(a) | set(b)):
        ca, cb = a.get(name, Counter()), b.get(name, Counter())
        lo, ex = ca - cb, cb - ca
        if lo:
            lost[name] = {k[:300]: v for k, v in lo.items()}
        if ex:
            extra[name] = {k[:300]: v for k, v in ex.items()}
    return {"lost": lost, "extra": extra}


def kill_unit_with_worker(s: Stack, r) -> dict:
    pid = pid_of_run(r) or find_engine_pid(str(r.id))
    ev = {"run": run_info(r), "pid": pid}
    if pid is None:
        ev["error"] = "flow run process not found"
        return ev
    w = worker_of(s, pid)
    ev["worker"] = w
    ev["run_pgid"] = os.getpgid(pid)
    t_kill = time.time()
    os.killpg(os.getpgid(pid), signal.SIGKILL)
    if w:
        s.stop(w, signal.SIGKILL)
    ev["kill_wall"] = datetime.fromtimestamp(t_kill, timezone.utc).isoformat()
    ev["kill_epoch"] = t_kill
    return ev


def next_run_of(s: Stack, name: str, after_id: str):
    runs = [r for r in s.unit_runs() if r.name == name and str(r.id) != after_id]
    return sorted(runs, key=lambda r: r.created)[-1] if runs else None


# --- cases -----------------------------------------------------------------------------------------------------
def c01(s: Stack, measure_only=False) -> dict:
    s.start_worker("w1")
    s.start_worker("w2")
    s.start_devloop()
    r = wait_for(lambda: running_unit(s, 3.0), 300)
    if r is None:
        return {"verdict": "inconclusive", "why": "no unit run Running within 300 s", "units": units_summary(s)}
    ev = kill_unit_with_worker(s, r)
    rerun = wait_for(lambda: next_run_of(s, r.name, str(r.id)), 120, step=0.25)
    if rerun:
        ev["rerun_created_after_kill_s"] = round(rerun.created.timestamp() - ev["kill_epoch"], 1)
        started = wait_for(lambda: (x := s.flow_runs(rerun.name)) and next(
            (y for y in x if y.id == rerun.id and y.start_time), None), 120, step=0.5)
        if started:
            ev["rerun_started_after_kill_s"] = round(started.start_time.timestamp() - ev["kill_epoch"], 1)
    ev["devloop"] = wait_devloop(s, timeout=600)
    ev["status"] = task_status(s)
    ev["units"] = units_summary(s)
    ev["lost_event"] = s.grep_ledger("unit_run_lost")
    if measure_only:
        return ev
    ev["dups"] = ledger_dups(s)
    ev["vs_direct"] = compare_with_direct(s)
    lost_run = next((u for u in ev["units"] if u["id"] == str(r.id)), {})
    rerun_info = next((u for u in ev["units"] if rerun and u["id"] == str(rerun.id)), {})
    ok1 = rerun is not None and ev["rerun_created_after_kill_s"] <= 39
    ok2 = lost_run.get("type") == "CRASHED" and "its worker is gone: no heartbeat for" in lost_run.get("message", "") and bool(
        ev["lost_event"])
    ok3 = ev["status"].get("status") == "done" and rerun_info.get("type") == "COMPLETED"
    ok4 = not ev["vs_direct"]["lost"] and not ev["dups"]
    ev["criteria"] = {"1_rerun_le_39s": ok1, "2_crashed_with_reason_and_event": ok2, "3_done_on_other": ok3,
                      "4_no_loss_no_dup": ok4}  # fmt: skip
    ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


def c02_c03(s: Stack) -> dict:
    shadow = s.base / "shadow"
    (shadow / "git").mkdir(parents=True)
    # an empty regular package: a folder without __init__.py is a namespace portion, which loses to the installed
    # GitPython (runner fix after C02's first run, where the workers imported the real GitPython)
    (shadow / "git" / "__init__.py").write_text("")
    s.start_worker("w1", str(shadow), [shadow])
    s.start_worker("w2", str(shadow), [shadow])
    s.start_devloop()
    ev = {"C02": {}, "C03": {}}
    e2 = ev["C02"]
    e2["devloop"] = wait_devloop(s, timeout=600)
    e2["status"] = task_status(s)
    e2["units"] = units_summary(s)
    note = e2["status"].get("note") or ""
    by_name = Counter(u["name"] for u in e2["units"])
    e2["criteria"] = {
        "1_quotes_load_error": "Unexpected exception encountered when trying to load flow" in note and "git" in note,
        "2_blocked_stage_failed_executor_error": e2["status"].get("status") == "blocked_pending_human"
        and e2["status"].get("blocked_reason") == "stage_failed" and "ran on the remote pool 2 times" in note,
        "3_two_runs_per_unit": bool(by_name) and all(v == 2 for v in by_name.values()),
        "4_returned": e2["devloop"].get("returned", False),
    }
    e2["verdict"] = "held" if all(e2["criteria"].values()) else "broke"
    # C03: fix the cause (correct workers), resume
    s.stop("w1")
    s.stop("w2")
    before = {u["id"] for u in e2["units"]}
    s.start_worker("w3")
    s.start_worker("w4")
    task = e2["status"].get("task_id")
    e3 = ev["C03"]
    t0 = time.monotonic()
    p = s.gl("resume", task, "-p", str(s.proj), "--playbook", str(s.playbook), "--quiet", timeout=900)
    e3["resume_rc"], e3["resume_s"] = p.returncode, round(time.monotonic() - t0, 1)
    e3["resume_out"] = (p.stdout[-800:], p.stderr[-800:])
    e3["status"] = task_status(s)
    e3["units"] = units_summary(s)
    new = [u for u in e3["units"] if u["id"] not in before]
    e3["new_runs"] = [(u["name"], u["type"], u["message"][:150]) for u in new]
    e3["criteria"] = {"fresh_run_started": bool(new), "done": e3["status"].get("status") == "done"}
    e3["verdict"] = "held" if all(e3["criteria"].values()) else "broke"
    return ev


def c04(s: Stack) -> dict:
    other = s.base / "other"
    shutil.copytree(ROOT, other, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "tests", "node_modules", "__pycache__", "*.egg-info", ".*cache", "examples", "docs"))
    with open(other / "graphlemon" / "__init__.py", "a") as f:
        f.write("\n# remotered: another build of the same version\n")
    s.start_worker("w1", str(other), [other])
    s.start_worker("w2", str(other), [other])
    s.start_devloop()
    ev = {"devloop": wait_devloop(s, timeout=600)}
    ev["status"] = task_status(s)
    ev["units"] = units_summary(s)
    note = ev["status"].get("note") or ""
    msgs = [u["message"] for u in ev["units"]]
    ev["criteria"] = {
        "runs_failed_not_crashed": bool(ev["units"]) and all(u["type"] == "FAILED" for u in ev["units"]),
        "runs_say_other_build": bool(msgs) and all("this worker runs GraphLemon" in m for m in msgs),
        "blocked_stage_failed_with_line": ev["status"].get("blocked_reason") == "stage_failed"
        and "this worker runs GraphLemon" in note,
        "returned": ev["devloop"].get("returned", False),
    }
    ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


def c05(s: Stack) -> dict:
    from prefect.states import Cancelling

    s.start_worker("w1")
    s.start_worker("w2")
    s.start_devloop()
    r = wait_for(lambda: running_unit(s, 2.0), 300)
    if r is None:
        return {"verdict": "inconclusive", "why": "no unit Running"}
    t_cancel = time.time()
    with s.client() as c:
        c.set_flow_run_state(r.id, Cancelling(message="remotered: Cancel as the UI"), force=True)
    ev = {"cancelled": run_info(r), "devloop": wait_devloop(s, timeout=600)}
    time.sleep(0)
    ev["status"] = task_status(s)
    ev["units"] = units_summary(s)
    same_after = [u for u in ev["units"] if u["name"] == r.name and u["id"] != str(r.id)]
    cancelled_run = next(u for u in ev["units"] if u["id"] == str(r.id))
    if cancelled_run["type"] != "CANCELLED":
        wait_for(lambda: s.flow_runs(r.name) and next(x for x in s.flow_runs(r.name) if x.id == r.id).state.type.value
                 == "CANCELLED", 40)  # fmt: skip
        cancelled_run = run_info(next(x for x in s.flow_runs(r.name) if x.id == r.id))
    ev["cancelled_run_final"] = cancelled_run
    dl = [run_info(x) for x in s.flow_runs("devloop") if x.created.timestamp() < t_cancel]
    ev["devloop_runs"] = dl
    ev["criteria"] = {
        "stopped_by_person": ev["status"].get("status") == "blocked_pending_human"
        and ev["status"].get("blocked_reason") == "stopped_by_person",
        "no_new_run_of_unit": not same_after,
        "run_ends_cancelled": cancelled_run["type"] == "CANCELLED",
        "devloop_cancelled_stopped": any(d["type"] == "CANCELLED" and d["state"] == "Stopped" for d in dl),
        "returned": ev["devloop"].get("returned", False),
    }
    ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


def c06(s: Stack) -> dict:
    s.start_worker("w1")
    s.start_worker("w2")
    s.start_devloop()
    r = wait_for(lambda: running_unit(s, 2.0), 300)
    if r is None:
        return {"verdict": "inconclusive", "why": "no unit Running"}
    with s.client() as c:
        c.delete_flow_run(r.id)
    ev = {"deleted": run_info(r)}
    ev["devloop"] = wait_devloop(s, timeout=600)
    ev["status"] = task_status(s)
    ev["units"] = units_summary(s)
    log = (s.base / "devloop.log").read_text()
    ev["criteria"] = {
        "second_run_created": any(u["name"] == r.name for u in ev["units"]),
        "done": ev["status"].get("status") == "done",
        "no_ObjectNotFound": "ObjectNotFound" not in log and "ObjectNotFound" not in (ev["status"].get("note") or ""),
    }
    ev["timeline_deleted"] = s.grep_ledger("deleted")[:5]
    ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


def c07(s: Stack) -> dict:
    s.start_worker("w1")
    s.start_worker("w2")
    s.start_devloop()
    r = wait_for(lambda: running_unit(s, 1.0), 300)
    if r is None:
        return {"verdict": "inconclusive", "why": "no unit Running"}
    task = s.tasks()[-1]
    t0 = now()
    p = s.gl("resume", task, "-p", str(s.proj), "--playbook", str(s.playbook), timeout=300)
    ev = {"resume_rc": p.returncode, "resume_stdout": p.stdout[-1500:], "resume_stderr": p.stderr[-2500:]}
    time.sleep(3)
    created = [run_info(x) for x in s.flow_runs("devloop") if x.created >= t0]
    ev["runs_created_by_resume"] = created
    ev["devloop"] = wait_devloop(s, timeout=600)
    ev["status"] = task_status(s)
    out = p.stdout + p.stderr
    ev["criteria"] = {
        "refused_TASK_HELD": p.returncode != 0 and "TASK_HELD" in out,
        "no_traceback": "Traceback" not in out,
        "its_run_cancelled_refused": all(c["type"] == "CANCELLED" and c["state"] == "Refused" for c in created),
        "no_new_failed": not any(c["type"] == "FAILED" for c in created),
        "original_done": ev["status"].get("status") == "done",
    }
    ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


def collision_taken_in(s: Stack):
    return [line for line in s.grep_ledger("collision") if "unit_blocked" in line] or None


def c08(s: Stack) -> dict:
    s.start_worker("w1")
    s.start_worker("w2")
    s.start_devloop(config={"unit_runner": "remote_pool", "max_unit_attempts": 2})
    seen = wait_for(lambda: collision_taken_in(s), 400, step=0.2)
    ev = {"seen": seen}
    if not seen:
        ev["devloop"] = wait_devloop(s, timeout=5)
        ev["status"] = task_status(s)
        return {**ev, "verdict": "inconclusive", "why": "collision's Blocked outcome never seen before the end"}
    t_kill = now()
    s.stop("devloop", signal.SIGKILL)
    ev["status_after_kill"] = task_status(s)
    task = s.tasks()[-1]
    if ev["status_after_kill"].get("status") in ("done", "blocked_pending_human"):
        ev["note"] = "the task had already ended when the kill came"
    p = s.gl("resume", task, "-p", str(s.proj), "--playbook", str(s.playbook), "--quiet", timeout=600)
    ev["resume_rc"], ev["resume_out"] = p.returncode, p.stdout[-600:] + p.stderr[-600:]
    ev["status"] = task_status(s)
    resumed = [x for x in s.flow_runs("devloop") if x.created >= t_kill]
    ev["resumed_runs"] = [run_info(x) for x in resumed]
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId

    cached = []
    with s.client() as c:
        for d in resumed:
            trs = c.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[d.id])), limit=200)
            subs = c.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[d.id])), limit=200)
            for x in list(trs) + list(subs):
                if x.state and x.state.name == "Cached":
                    cached.append({"name": x.name, "type": x.state.type.value, "message": (x.state.message or "")[:200]})
            ev.setdefault("subflows", []).extend(run_info(x) for x in subs)
    ev["cached"] = cached
    red_reused = [x for x in cached if "recorded red" in x["message"]]
    coll = [x for x in cached if "collision" in x["name"] and "round 0" in x["name"]]
    ev["criteria"] = {
        "resume_returned": True,
        "recorded_red_are_failed_type": all(x["type"] == "FAILED" for x in red_reused),
        "collision_r0_not_completed": all(x["type"] != "COMPLETED" for x in coll),
    }
    if not coll and not red_reused:
        ev["verdict"] = "inconclusive"
        ev["why"] = "the resumed run shows no reused step for collision round 0"
    else:
        ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


def c09(s: Stack, only: str | None = None) -> dict:
    ev = {}
    for variant, sig in (("a_SIGKILL", signal.SIGKILL), ("b_SIGINT", signal.SIGINT)):
        if only and variant != only:
            continue
        e = ev[variant] = {}
        t0 = now()
        args = [str(BIN / "graphlemon"), "run", "Implement a snake game", "--playbook", str(s.playbook), "-p",
                str(s.proj), "--quiet"]  # fmt: skip
        s.spawn("cli", args, s.devloop_env(), cwd=s.base)
        r = wait_for(lambda: next((x for x in s.unit_runs() if x.created >= t0 and x.state.type.value == "RUNNING"),
                                  None), 300, step=0.3)  # fmt: skip
        if r is None:
            e["verdict"] = "inconclusive"
            e["why"] = "no unit subflow Running"
            s.stop("cli")
            continue
        task = s.tasks()[-1]
        e["cut_subflow"] = run_info(r)
        proc = s.procs["cli"]
        os.killpg(proc.pid, sig)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            e["cli_did_not_exit_120s"] = True
        s.stop("cli")
        dl = [x for x in s.flow_runs("devloop") if x.created >= t0]
        if variant == "a_SIGKILL":
            p = s.gl("resume", task, "-p", str(s.proj), "--playbook", str(s.playbook), "--quiet", timeout=600)
            e["resume_rc"] = p.returncode
            e["status_after_resume"] = task_status(s)
        else:
            time.sleep(15)
            e["status_after_int"] = task_status(s)
        tree = []
        with s.client() as c:
            from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

            parents = [x.id for x in dl[:1]] if variant == "b_SIGINT" else [x.id for x in dl]
            killed_dl = [x for x in dl if x.created < (now())]
            e["devloop_runs"] = [run_info(x) for x in killed_dl]
            parents = [x.id for x in dl]
            seen = set()
            while parents:
                subs = c.read_flow_runs(flow_run_filter=FlowRunFilter(
                    parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=parents)), limit=200)
                subs = [x for x in subs if x.id not in seen]
                seen |= {x.id for x in subs}
                tree += subs
                parents = [x.id for x in subs]
            cut = c.read_flow_run(r.id)
        e["cut_subflow_final"] = run_info(cut)
        e["running_in_tree"] = [run_info(x) for x in tree if x.state.type.value == "RUNNING"]
        e["criteria"] = {"no_subflow_running": not e["running_in_tree"] and cut.state.type.value != "RUNNING",
                         "cut_not_completed": cut.state.type.value != "COMPLETED"}  # fmt: skip
        e["verdict"] = "held" if all(e["criteria"].values()) else "broke"
        if variant == "b_SIGINT" and task_status(s).get("status") not in ("done",):
            s.gl("abandon", task, "-p", str(s.proj))
    ev["verdict"] = "held" if all(v.get("verdict") == "held" for v in ev.values() if isinstance(v, dict)) else "broke"
    return ev


def c10(s: Stack) -> dict:
    ev = {"a": {}, "b": {}}
    s.start_worker("w1")
    s.start_worker("w2")
    s.start_devloop(name="dl_a", storage=False)
    ev["a"]["devloop"] = wait_devloop(s, "dl_a", timeout=300)
    ev["a"]["log_tail"] = (s.base / "dl_a.log").read_text()[-1200:]
    ev["a"]["status"] = task_status(s)
    ev["a"]["units"] = units_summary(s)
    msg = "INVALID_PARAM: remote unit loops need a shared result store: set PREFECT_DEFAULT_RESULT_STORAGE_BLOCK"
    ev["a"]["criteria"] = {"refused_with_message": msg in (s.base / "dl_a.log").read_text(),
                           "no_unit_run": not ev["a"]["units"],
                           "not_stage_failed": ev["a"]["status"].get("blocked_reason") != "stage_failed"}  # fmt: skip
    # (b) a task interrupted mid-run, resumed without then with the variable
    n_before = len(s.tasks())
    s.start_devloop(name="dl_b")
    r = wait_for(lambda: running_unit(s, 1.0), 300)
    if r is None:
        ev["b"] = {"verdict": "inconclusive", "why": "no unit Running"}
    else:
        s.stop("dl_b", signal.SIGKILL)
        tasks = s.tasks()
        task = tasks[-1]
        ev["b"]["tasks_before"] = n_before
        ev["b"]["status_before"] = task_status(s)
        p = s.gl("resume", task, "-p", str(s.proj), "--playbook", str(s.playbook), "--quiet", storage=False,
                 timeout=300)  # fmt: skip
        ev["b"]["resume_without"] = {"rc": p.returncode, "out": (p.stdout[-800:] + p.stderr[-800:])}
        ev["b"]["status_after_refusal"] = task_status(s)
        p2 = s.gl("resume", task, "-p", str(s.proj), "--playbook", str(s.playbook), "--quiet", timeout=600)
        ev["b"]["resume_with"] = {"rc": p2.returncode, "out": (p2.stdout[-500:] + p2.stderr[-500:])}
        ev["b"]["status_end"] = task_status(s)
        sb, sa = ev["b"]["status_before"], ev["b"]["status_after_refusal"]
        ev["b"]["criteria"] = {
            "refused_with_message": p.returncode != 0 and msg in (p.stdout + p.stderr),
            "status_unchanged": (sb.get("status"), sb.get("blocked_reason")) == (sa.get("status"), sa.get("blocked_reason")),
            "not_stage_failed": sa.get("blocked_reason") != "stage_failed",
            "done_with_variable": ev["b"]["status_end"].get("status") == "done",
        }
    crit = {**{f"a_{k}": v for k, v in ev["a"]["criteria"].items()},
            **{f"b_{k}": v for k, v in ev["b"].get("criteria", {}).items()}}  # fmt: skip
    ev["verdict"] = "held" if crit and all(crit.values()) and "criteria" in ev["b"] else "broke"
    return ev


def c11(s: Stack) -> dict:
    s.start_devloop()
    wait_for(lambda: s.tasks(), 60)
    time.sleep(75)
    ev = {"waiting_events": s.grep_ledger("unit_run_waiting")[:4], "units_before_stop": units_summary(s)}
    task = s.tasks()[-1]
    t0 = time.monotonic()
    p = s.gl("stop", task, "-p", str(s.proj), "--timeout", "120", timeout=200)
    ev["stop_rc"], ev["stop_s"], ev["stop_out"] = p.returncode, round(time.monotonic() - t0, 1), p.stdout[-500:] + p.stderr[-500:]
    ev["devloop"] = wait_devloop(s, timeout=60)
    ev["status"] = task_status(s)
    ev["units"] = units_summary(s)
    ev["cancelled_events"] = s.grep_ledger("unit_run_cancelled")[:4]
    ev["criteria"] = {
        "waiting_event_within_75s": bool(ev["waiting_events"]),
        "scheduled_runs_cancelled": bool(ev["units"]) and all(u["type"] == "CANCELLED" for u in ev["units"]),
        "cancelled_event": bool(ev["cancelled_events"]),
        "stopped_by_person": ev["status"].get("blocked_reason") == "stopped_by_person",
        "devloop_returned_60s": ev["devloop"].get("returned", False),
    }
    ev["verdict"] = "held" if all(ev["criteria"].values()) else "broke"
    return ev


CASES = {"C01": c01, "C02": c02_c03, "C04": c04, "C05": c05, "C06": c06, "C07": c07, "C08": c08, "C09": c09,
         "C10": c10, "C11": c11, "C09b": lambda s: c09(s, "b_SIGINT"), "M1": lambda s: c01(s, measure_only=True)}  # fmt: skip


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for case in sys.argv[1:]:
        base = Path("/tmp/rr") / f"{case}-{int(time.time())}"
        s = Stack(base)
        load = os.getloadavg()
        t0 = time.monotonic()
        try:
            s.up()
            ev = CASES[case](s)
        except Exception as exc:  # noqa: BLE001 - a runner error is evidence too
            import traceback

            ev = {"verdict": "inconclusive", "runner_error": traceback.format_exc()[-3000:]}
        finally:
            s.down()
        ev.update(case=case, base=str(base), load_before=load, load_after=os.getloadavg(),
                  seconds=round(time.monotonic() - t0, 1))  # fmt: skip
        path = OUT / f"{case}-{int(time.time())}.json"
        path.write_text(json.dumps(ev, indent=1, default=str))
        print(case, ev.get("verdict"), path, flush=True)


if __name__ == "__main__":
    main()
