"""harnessred runner: each scenario of scenarios.py through the real loop, one at a time.

    .venv/bin/python tests/redteam_harness/run_scenarios.py [--only S00,H01] [--engine direct|prefect|both]
                     [--graphlemon CHECKOUT|VENV|EXECUTABLE] [--work /work/redteam/harness] [--report-only]
                     [--results-md PATH]

--graphlemon names the GraphLemon under test: a checkout (its .venv/bin/graphlemon), a venv (bin/graphlemon) or the
graphlemon executable itself; default: this checkout. The scenarios, the fake server and examples/snake always come
from this checkout (the frozen inputs), only the `graphlemon` command (and its venv's python, for reading Prefect
logs) from the one named. Use one --work folder per GraphLemon under test: the baseline S00 is per work folder
(run first when missing).

Per run: a fresh copy of examples/snake (git init, one commit, `graphlemon init`), an `RTServer` in this process
(responder: the scenario's Injector around the conformance model), then `graphlemon run "Implement a snake game"
--executor anthropic --engine E` as a child process with ANTHROPIC_BASE_URL at the server. Afterwards: status,
budget, evidence packs, transcripts, Prefect logs (engine prefect), the server's record of every request. Each
run's facts and verdict go to WORK/results/<sid>-<engine>.json; tests/redteam_harness/RESULTS.md is rebuilt from
all of them. The Prefect engine uses GraphLemon's local server in a config folder of the runner's own, stopped
(`graphlemon server stop`) when the runner ends.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))  # tests/
sys.path.insert(0, str(HERE))

from fakes.conformance import snake_solution  # noqa: E402
from fakes.conformance_model import ConformanceModel  # noqa: E402
from fakes.misbehaving_model import turn_of  # noqa: E402
from scenarios import BY_ID, RUN_KEY, SECRETS, Injector, RTServer, S, Scenario  # noqa: E402

GL = str(ROOT / ".venv" / "bin" / "graphlemon")  # set by --graphlemon
PY = str(ROOT / ".venv" / "bin" / "python")


def resolve_graphlemon(where: str) -> tuple[str, str]:
    """(graphlemon executable, that venv's python) for a checkout, a venv or an executable."""
    p = Path(where).expanduser().resolve()
    for exe in (p / ".venv" / "bin" / "graphlemon", p / "bin" / "graphlemon", p):
        if exe.is_file() and os.access(exe, os.X_OK):
            py = exe.parent / "python"
            return str(exe), str(py if py.exists() else sys.executable)
    raise SystemExit(f"--graphlemon {where}: no graphlemon executable (tried .venv/bin/graphlemon, bin/graphlemon)")


GOAL = "Implement a snake game"
TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
CONTEXT_WINDOW = 200_000  # tokens, 4 characters each (the fake's rule)
SECRET_CORES = {
    "anthropic": "ThinkSecretAbcdefghij0123456789",
    "github": SECRETS["github"][4:],
    "aws": SECRETS["aws"],
    "run_key": "HarnessRedRunKey0123456789",
}


def sh(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def base_env(work: Path, engine: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("ANTHROPIC_", "PREFECT_", "GRAPHLEMON_")) and "proxy" not in k.lower()}  # fmt: skip
    env.update({
        "PATH": f"{Path(GL).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        "GRAPHLEMON_CONFIG_DIR": str(work / f"config-{engine}"),
        "PREFECT_HOME": str(work / f"prefect-home-{engine}"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "GIT_AUTHOR_NAME": "harnessred", "GIT_AUTHOR_EMAIL": "harnessred@example.invalid",
        "GIT_COMMITTER_NAME": "harnessred", "GIT_COMMITTER_EMAIL": "harnessred@example.invalid",
        "COLUMNS": "200", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
    })  # fmt: skip
    return env


def make_project(run_dir: Path, env: dict[str, str]) -> Path:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    repo = run_dir / "repo"
    shutil.copytree(ROOT / "examples" / "snake" / "repo", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)
    r = sh([GL, "init", str(repo), "--yes"], env=env)
    if r.returncode:
        raise RuntimeError(f"graphlemon init failed: {r.stdout}\n{r.stderr}")
    return repo


def prefect_logs(env: dict[str, str], since: float) -> tuple[list[str], str]:
    """Every Prefect log line since `since` on the runner's local server (engine prefect)."""
    st = sh([GL, "server", "status", "--json"], env=env)
    try:
        info = json.loads(st.stdout)
    except ValueError:
        return [], f"server status unreadable: {st.stdout[:200]} {st.stderr[:200]}"
    api = info.get("api_url") or info.get("api") or info.get("url")
    if not api:
        for v in info.values():
            if isinstance(v, str) and v.startswith("http") and "/api" in v:
                api = v
    if not api:
        return [], f"no api url in {info}"
    code = (
        "import asyncio, json, sys, datetime\n"
        "from prefect.client.orchestration import get_client\n"
        "from prefect.client.schemas.filters import LogFilter, LogFilterTimestamp\n"
        "async def main():\n"
        "    after = datetime.datetime.fromtimestamp(float(sys.argv[1]), datetime.timezone.utc)\n"
        "    out, offset = [], 0\n"
        "    async with get_client() as c:\n"
        "        while True:\n"
        "            page = await c.read_logs(log_filter=LogFilter(timestamp=LogFilterTimestamp(after_=after)),"
        " limit=200, offset=offset)\n"
        "            out += [f'{l.level} {l.name}: {l.message}' for l in page]\n"
        "            if len(page) < 200: break\n"
        "            offset += 200\n"
        "    print(json.dumps(out))\n"
        "asyncio.run(main())\n"
    )
    r = sh([PY, "-c", code, str(since - 5)], env={**env, "PREFECT_API_URL": api}, timeout=300)
    try:
        return json.loads(r.stdout), api
    except ValueError:
        return [], f"log read failed: {r.stderr[-500:]}"


def files_under(folder: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    out = []
    for p in folder.rglob("*"):
        rel = p.relative_to(folder).as_posix()
        if any(rel.startswith(s) for s in skip):
            continue
        if p.is_file() and not p.is_symlink():
            out.append(p)
    return out


def read(p: Path, cap: int = 50_000_000) -> str:
    try:
        return p.read_bytes()[:cap].decode(errors="replace")
    except OSError:
        return ""


def tool_results(body: Any) -> list[dict[str, Any]]:
    out = []
    for m in (body or {}).get("messages", []) if isinstance(body, dict) else []:
        if isinstance(m.get("content"), list):
            out += [b for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out


def result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    return "".join(b.get("text", "") for b in c if isinstance(b, dict))


def tool_uses_by_id(body: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for m in (body or {}).get("messages", []) if isinstance(body, dict) else []:
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    out[b.get("id")] = b
    return out


def find_task(status_json: Any) -> dict[str, Any] | None:
    tasks = status_json.get("tasks") if isinstance(status_json, dict) else status_json
    if isinstance(tasks, list) and tasks:
        return tasks[0]
    return None


def neg_numbers(obj: Any, path: str = "") -> list[str]:
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += neg_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += neg_numbers(v, f"{path}[{i}]")
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        if re.search(r"token|cost|usd", path, re.I) and (
            obj < 0 or (isinstance(obj, float) and not math.isfinite(obj))
        ):
            out.append(f"{path}={obj}")
    return out


def run_one(sc: Scenario, engine: str, work: Path, baseline: dict[str, Any] | None) -> dict[str, Any]:
    run_dir = work / "runs" / f"{sc.sid}-{engine}"
    env = base_env(work, engine)
    repo = make_project(run_dir, env)
    solution = snake_solution(ROOT / "examples" / "snake")
    facts: dict[str, Any] = {"sid": sc.sid, "engine": engine, "title": sc.title}
    with RTServer(api_key=RUN_KEY, context_window=CONTEXT_WINDOW) as server:
        injector = Injector(ConformanceModel(solution), sc, server)
        server.responder = injector
        fake_errors: list[str] = []  # exceptions inside the fake itself (test infrastructure, not GraphLemon)
        frozen_handle = server.handle

        def recorded_handle(*a: Any, **kw: Any) -> Any:
            try:
                return frozen_handle(*a, **kw)
            except BaseException as e:  # recorded, then raised as before: the fake's behaviour is unchanged
                fake_errors.append(f"{type(e).__name__}: {str(e)[:160]}")
                raise

        server.handle = recorded_handle  # type: ignore[method-assign]
        run_env = {**env, "ANTHROPIC_API_KEY": RUN_KEY, "ANTHROPIC_BASE_URL": server.base_url,
                   "GRAPHLEMON_EXECUTOR": "anthropic", "GRAPHLEMON_RETRY_MAX": "3",
                   "GRAPHLEMON_RETRY_BASE_DELAY_S": "0.05", "GRAPHLEMON_RETRY_MAX_DELAY_S": "1", **sc.env}  # fmt: skip
        cmd = [GL, "run", GOAL, "--project", str(repo), "--executor", "anthropic", "--engine", engine, *sc.args]
        started = time.time()
        with open(run_dir / "stdout.txt", "wb") as out, open(run_dir / "stderr.txt", "wb") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=run_env, cwd=run_dir, start_new_session=True)
            killed = False
            try:
                rc = proc.wait(timeout=sc.wall_s)
            except subprocess.TimeoutExpired:
                killed = True
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    rc = proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    rc = proc.wait()
        wall = time.time() - started
        reqs = list(zip(server.requests, server.sizes, server.usages, server.scripted, strict=False))
    facts.update(
        rc=rc, killed=killed, wall_s=round(wall, 1), cmd=" ".join(cmd), graphlemon=GL, fake_errors=fake_errors[:5]
    )

    stdout, stderr = read(run_dir / "stdout.txt"), read(run_dir / "stderr.txt")
    st = sh([GL, "status", "--project", str(repo), "--json"], env=env)
    try:
        st_json = json.loads(st.stdout)
    except ValueError:
        st_json = {}
    task = find_task(st_json) or {}
    task_id = task.get("task_id") or task.get("id") or ""
    st_text = sh([GL, "status", "--project", str(repo), "--wide"], env=env)
    st_task = sh([GL, "status", task_id, "--project", str(repo)], env=env) if task_id else None
    st_task_json = sh([GL, "status", task_id, "--project", str(repo), "--json"], env=env) if task_id else None
    budget = sh([GL, "budget", "show", task_id, "--project", str(repo), "--json"], env=env) if task_id else None
    for name, r in (("status.txt", st_text), ("status-task.txt", st_task), ("status-task.json", st_task_json),
                    ("budget.json", budget), ("status.json", st)):  # fmt: skip
        if r is not None:
            (run_dir / name).write_text(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    try:
        budget_json = json.loads(budget.stdout) if budget else {}
    except ValueError:
        budget_json = {}
    gl_dir = repo / ".graphlemon"
    packs = sorted(p for p in gl_dir.rglob("*.md") if "escalation" in p.as_posix())
    person = "\n".join([stdout, stderr, st_text.stdout, st_task.stdout if st_task else "",
                        *(read(p) for p in packs)])  # fmt: skip

    # status and reason
    detail: dict[str, Any] = {}
    try:
        detail = json.loads(st_task_json.stdout) if st_task_json else {}
    except ValueError:
        detail = {}
    tdetail = detail.get("task", detail) if isinstance(detail, dict) else {}
    status = task.get("status") or tdetail.get("status")
    reason = task.get("blocked_reason") or tdetail.get("blocked_reason")
    facts.update(task_id=task_id, status=status, blocked_reason=reason)

    # tracebacks
    tb_places = []
    for name, text in (
        ("stdout", stdout),
        ("stderr", stderr),
        ("status", st_text.stdout + st_text.stderr),
        ("status TASK", (st_task.stdout + st_task.stderr) if st_task else ""),
        ("status TASK --json", (st_task_json.stdout + st_task_json.stderr) if st_task_json else ""),
    ):
        if TRACEBACK.search(text):
            tb_places.append(name)  # fmt: skip
    for p in files_under(gl_dir, skip=("worktrees/",)):
        if TRACEBACK.search(read(p)):
            tb_places.append(str(p.relative_to(repo)))
    plogs: list[str] = []
    if engine == "prefect":
        plogs, api = prefect_logs(env, started)
        facts["prefect_logs"] = len(plogs)
        facts["prefect_api"] = api
        (run_dir / "prefect-logs.json").write_text(json.dumps(plogs, indent=1))
        if any(TRACEBACK.search(line) for line in plogs):
            tb_places.append("prefect logs")
        for p in files_under(work / f"config-{engine}"):
            if p.suffix in (".log", ".txt") and TRACEBACK.search(read(p)):
                tb_places.append(str(p))
    facts["traceback"] = tb_places

    # the server's record
    messages = [(r, size, usage, scripted) for r, size, usage, scripted in reqs if r.path.startswith("/v1/messages")]
    facts["calls"] = len(messages)
    matched = [(r, size, usage, scripted) for r, size, usage, scripted in messages
               if isinstance(r.body, dict) and r.body.get("messages") and injector.matches(turn_of(r.body))]  # fmt: skip
    facts["turn_calls"] = len(matched)
    facts["injected"] = injector.injected
    bad_4xx = []
    too_long = 0
    for r, size, _usage, scripted in messages:
        if 400 <= r.status < 500 and not scripted:
            if r.status == 400 and size // 4 > CONTEXT_WINDOW:
                too_long += 1
            else:
                bad_4xx.append(r.status)
    facts["malformed_4xx"] = bad_4xx
    facts["prompt_too_long_400"] = too_long
    facts["max_request_bytes"] = max((size for _, size, _, _ in messages), default=0)
    sent = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    for _, _, usage, _ in messages:
        if isinstance(usage, dict):
            for k, key in (
                ("input", "input_tokens"),
                ("output", "output_tokens"),
                ("cache_read", "cache_read_input_tokens"),
                ("cache_write", "cache_creation_input_tokens"),
            ):
                v = usage.get(key)
                if isinstance(v, int):
                    sent[k] += v  # fmt: skip
    facts["server_tokens"] = sent
    used = None
    for key in ("used", "used_tokens", "tokens_used"):
        if isinstance(budget_json.get(key), int | float):
            used = budget_json[key]
            break
    if used is None and isinstance(budget_json.get("used"), dict):
        used = budget_json["used"].get("tokens")
    facts["ledger_tokens"] = used
    facts["budget"] = {k: budget_json.get(k) for k in list(budget_json)[:8]} if isinstance(budget_json, dict) else {}

    # the person's summary: timeline lines naming turns and the end
    keep = re.compile(r"(turn_|refus|no_tool_use|repeat|out of|out_of|stage_failed|blocked|needs you|TASK:|giving up|"
                      r"gave up|HTML|error\[|budget|tool_skipped|context_cleared|answered)", re.I)  # fmt: skip
    lines = [ln.strip() for ln in stdout.splitlines() if keep.search(ln)]
    facts["summary_lines"] = lines[-12:]
    facts["last_lines"] = [ln for ln in stdout.strip().splitlines()[-4:]]

    # verdict
    v: dict[str, Any] = {}
    end_ok = status == sc.end and (sc.reason is None or bool(reason and re.search(sc.reason, str(reason))))
    alt = False
    if not end_ok and sc.acceptable_alt and status == sc.acceptable_alt:
        alt = all(re.search(p, person, re.I) for p in sc.acceptable_alt_person)
        end_ok = alt
    v["U1_end"] = end_ok and not killed and status in ("done", "blocked_pending_human")
    v["U2_no_traceback"] = not tb_places
    base = baseline["ledger_tokens"] if baseline and baseline.get("ledger_tokens") else None
    facts["B"] = base
    if base and used is not None:
        v["U3_tokens"] = used <= sc.tokens_x * base
    else:
        v["U3_tokens"] = sc.sid == "S00" or None
    missing = [p for p in sc.person_must if not re.search(p, person, re.I)]
    facts["person_missing"] = missing
    v["U4_person"] = not missing
    v["U5_no_malformed_request"] = not bad_4xx
    if sc.role is not None:
        v["scenario_injected"] = injector.injected > 0  # else the scenario never happened (vacuous, not a PASS)
    if sc.turn_calls_max is not None:
        v["turn_calls<=max"] = len(matched) <= sc.turn_calls_max
    if sc.turn_calls_min is not None:
        v["turn_calls>=min"] = len(matched) >= sc.turn_calls_min
    for check in sc.checks:
        name, _, arg = check.partition(":")
        v[check] = CHECKS[name](arg, locals())
    facts["alt_end"] = alt
    facts["verdict"] = v
    facts["pass"] = all(x is not False for x in v.values())
    return facts


# -- per-scenario checks: (arg, the run's locals) -> bool --------------------------------------------------------


def _max_request_bytes(arg: str, L: dict[str, Any]) -> bool:
    return L["facts"]["max_request_bytes"] <= int(arg)


def _oversize_requests_at_most(arg: str, L: dict[str, Any]) -> bool:
    n, _, limit = arg.partition("@")
    big = [s for _, s, _, _ in L["messages"] if s > int(limit or 700_000)]
    L["facts"]["oversize_requests"] = len(big)
    return len(big) <= int(n)


def _tool_results_capped(arg: str, L: dict[str, Any]) -> bool:
    longest = 0
    for r, _, _, _ in L["messages"]:
        for b in tool_results(r.body):
            longest = max(longest, len(result_text(b)))
    L["facts"]["longest_tool_result"] = longest
    return longest <= int(arg)


def _unknown_tool_answer(arg: str, L: dict[str, Any]) -> bool:
    for r, _, _, _ in L["matched"]:
        uses = tool_uses_by_id(r.body)
        for b in tool_results(r.body):
            if uses.get(b.get("tool_use_id"), {}).get("name") == "bash":
                return "submit_output" in result_text(b)
    return False


def _tool_errors_at_least(arg: str, L: dict[str, Any]) -> bool:
    best = 0
    for r, _, _, _ in L["matched"]:
        best = max(best, sum(1 for b in tool_results(r.body) if b.get("is_error")))
    L["facts"]["tool_errors_seen"] = best
    return best >= int(arg)


def _marker_never_written(arg: str, L: dict[str, Any]) -> bool:
    repo: Path = L["repo"]
    log = sh(["git", "-C", str(repo), "log", "--all", "-p"], env=L["env"]).stdout
    hits = ["git log" for _ in [0] if arg in log]
    for p in files_under(repo, skip=(".git/", ".graphlemon/logs/")):
        if p.suffix != ".ndjson" and arg in read(p):
            hits.append(str(p.relative_to(repo)))
    L["facts"]["marker_hits"] = hits
    return not hits


def _tool_skipped_at_least(arg: str, L: dict[str, Any]) -> bool:
    n = sum(read(p).count('"tool_skipped"') for p in files_under(L["gl_dir"] / "logs") if p.suffix == ".ndjson")
    L["facts"]["tool_skipped_events"] = n
    return n >= int(arg)


def _no_secrets_written(arg: str, L: dict[str, Any]) -> bool:
    hits = []
    texts = [("output", L["person"]), ("prefect logs", "\n".join(L["plogs"]))]
    for name, text in texts:
        hits += [f"{name}:{k}" for k, core in SECRET_CORES.items() if core in text]
    for folder in (L["gl_dir"], L["work"] / f"config-{L['engine']}"):
        for p in files_under(folder):
            text = read(p)
            hits += [f"{p}:{k}" for k, core in SECRET_CORES.items() if core in text]
    L["facts"]["secret_hits"] = hits[:20]
    return not hits


def _no_signature_400(arg: str, L: dict[str, Any]) -> bool:
    return not L["bad_4xx"]


def _no_negative_usage(arg: str, L: dict[str, Any]) -> bool:
    bad = []
    for p in files_under(L["gl_dir"], skip=("worktrees/", "logs/")):
        if p.suffix != ".ndjson":
            continue
        for line in read(p).splitlines():
            try:
                bad += neg_numbers(json.loads(line))
            except ValueError:
                continue
    bad += neg_numbers(L["budget_json"], "budget")
    L["facts"]["negative_usage"] = bad[:10]
    return not bad


def _no_request_after_huge_usage(arg: str, L: dict[str, Any]) -> bool:
    msgs = L["messages"]
    idx = [i for i, (_, _, u, _) in enumerate(msgs) if isinstance(u, dict) and (u.get("input_tokens") or 0) >= 10**15]
    L["facts"]["requests_after_huge_usage"] = (len(msgs) - 1 - idx[0]) if idx else None
    return bool(idx) and idx[0] == len(msgs) - 1


def _finite_costs(arg: str, L: dict[str, Any]) -> bool:
    texts = [L["budget"].stdout if L["budget"] else "", L["st_task_json"].stdout if L["st_task_json"] else ""]
    return not any(re.search(r"\b(inf|nan|Infinity|NaN)\b", t) for t in texts) and _no_negative_usage("", L)


def _wall_at_most_baseline_plus(arg: str, L: dict[str, Any]) -> bool:
    b = L["baseline"]
    return bool(b) and L["wall"] <= b["wall_s"] + float(arg)


CHECKS = {
    "max_request_bytes": _max_request_bytes,
    "oversize_requests_at_most": _oversize_requests_at_most,
    "tool_results_capped": _tool_results_capped,
    "unknown_tool_answer_lists_submit_output": _unknown_tool_answer,
    "tool_errors_at_least": _tool_errors_at_least,
    "marker_never_written": _marker_never_written,
    "tool_skipped_at_least": _tool_skipped_at_least,
    "no_secrets_written": _no_secrets_written,
    "no_signature_400": _no_signature_400,
    "no_negative_usage": _no_negative_usage,
    "no_request_after_huge_usage": _no_request_after_huge_usage,
    "finite_costs": _finite_costs,
    "wall_at_most_baseline_plus": _wall_at_most_baseline_plus,
}


# -- the console: the same runs as a person sees them in `graphlemon console` ------------------------------------


def console_check(work: Path, engine: str, sids: set[str] | None = None) -> None:
    """Start one console on the engine's config folder (loopback, a token of our own), read every finished run's
    task as the page does (task, budget, node logs rendered) and add "console" to the run's tracebacks when any
    answer holds one. The console is stopped (its own pid) afterwards."""
    import http.cookiejar
    import secrets
    import socket
    import urllib.parse
    import urllib.request

    env = base_env(work, engine)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = secrets.token_hex(16)
    log = open(work / f"console-{engine}.log", "wb")
    proc = subprocess.Popen([GL, "console", "--port", str(port), "--token", token], stdout=log, stderr=log, env=env,
                            start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def get(path: str) -> tuple[int, str]:
        try:
            with opener.open(base + path, timeout=60) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")
        except OSError as e:
            return 0, f"{type(e).__name__}: {e}"

    try:
        for _ in range(60):
            if get(f"/?token={token}")[0] == 200:
                break
            time.sleep(1)
        status, body = get("/api/projects")
        projects = {p["root"]: p["project_id"] for p in json.loads(body)} if status == 200 else {}
        for rpath in sorted((work / "results").glob(f"*-{engine}.json")):
            facts = json.loads(rpath.read_text())
            if sids and facts["sid"] not in sids:
                continue
            root = str(work / "runs" / f"{facts['sid']}-{engine}" / "repo")
            pid = projects.get(root)
            answers: dict[str, Any] = {}
            if pid is None:
                facts["console"] = "project not listed by the console"
            else:
                q = urllib.parse.quote
                for path in (f"/api/projects/{q(pid)}/tasks", "/api/runs"):
                    answers[path] = get(path)
                tid = facts.get("task_id") or ""
                if tid:
                    for path in (f"/api/projects/{q(pid)}/tasks/{q(tid)}", f"/api/projects/{q(pid)}/tasks/{q(tid)}/budget",
                                 f"/api/projects/{q(pid)}/tasks/{q(tid)}/logs", f"/api/projects/{q(pid)}/bugs"):  # fmt: skip
                        answers[path] = get(path)
                    try:
                        logs = json.loads(answers[f"/api/projects/{q(pid)}/tasks/{q(tid)}/logs"][1]).get("logs", [])
                    except (ValueError, AttributeError):
                        logs = []
                    for lg in logs:
                        nid = q(lg.get("node_exec_id", ""))
                        path = f"/api/projects/{q(pid)}/logs/{nid}/range?start=0&max=20000000&render=1"
                        answers[path] = get(path)
                bad = [p for p, (code, text) in answers.items() if code >= 500 or code == 0]
                tbs = [p for p, (_, text) in answers.items() if TRACEBACK.search(text)]
                facts["console"] = {"answers": len(answers), "errors": bad, "tracebacks": tbs}
                (work / "runs" / f"{facts['sid']}-{engine}" / "console.json").write_text(
                    json.dumps({p: {"status": c, "text": t[:200_000]} for p, (c, t) in answers.items()}, indent=1)
                )
                facts["traceback"] = [t for t in facts["traceback"] if t != "console"] + (["console"] if tbs else [])
                facts["verdict"]["U2_no_traceback"] = not facts["traceback"]
                facts["pass"] = all(x is not False for x in facts["verdict"].values())
            rpath.write_text(json.dumps(facts, indent=1, default=str))
            print(f"   console {facts['sid']} {engine}: {facts['console']}", flush=True)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


# -- the report ----------------------------------------------------------------------------------------------------


SUMMARY_EVENT = re.compile(r"^\s+\d\d:\d\d:\d\d (turn_\w+|coder_out_of_turns|coder_claims_unmet|escalated|tool_skipped|"
                           r"context_cleared)\b")  # fmt: skip


def person_summary(stdout_path: Path, limit: int = 3, width: int = 230) -> str:
    """The live timeline lines of `graphlemon run` that name what happened (turn ends, escalation), deduplicated."""
    seen: list[str] = []
    for line in read(stdout_path).splitlines():
        if SUMMARY_EVENT.search(line):
            text = " ".join(line.split()[1:])
            if text not in seen:
                seen.append(text)
    if not seen:  # nothing went wrong that the person was told of: the closing line
        lines = [ln.strip() for ln in read(stdout_path).splitlines() if ln.strip().startswith("convergence:")]
        seen = lines[-1:]
    return " / ".join(t[:width] + ("…" if len(t) > width else "") for t in seen[:limit])


def report(work: Path) -> str:
    rows = []
    results = {}
    for p in sorted((work / "results").glob("*.json")):
        f = json.loads(p.read_text())
        results[(f["sid"], f["engine"])] = f
    order = {sc.sid: i for i, sc in enumerate(S)}
    for (sid, engine), f in sorted(results.items(), key=lambda kv: (kv[0][1] != "direct", order.get(kv[0][0], 99))):
        v = f["verdict"]
        fails = [k for k, x in v.items() if x is False]
        summary = person_summary(work / "runs" / f"{sid}-{engine}" / "stdout.txt").replace("|", "\\|")
        tok = f.get("ledger_tokens")
        ratio = f" ({tok / f['B']:.2f}×B)" if tok is not None and f.get("B") else ""
        rows.append(
            f"| {sid} | {engine} | {f.get('status')} | {f.get('blocked_reason') or ''} | "
            f"{'yes: ' + ', '.join(f['traceback'][:3]) if f['traceback'] else 'no'} | {f['calls']} / {f['turn_calls']} | "
            f"{tok}{ratio} | {summary} | {'PASS' if f['pass'] else 'FAIL: ' + ', '.join(fails)} |"
        )
    head = ("| id | engine | end state | reason | traceback | calls (all / matched turn) | ledger tokens | "
            "what the person was told (timeline lines naming it; else the closing line) | verdict |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    notes = [
        f"- {sid} {engine}: the fake itself raised {'; '.join(f['fake_errors'])} (test infrastructure: the "
        "connection was dropped without an answer)"
        for (sid, engine), f in results.items()
        if f.get("fake_errors")
    ]
    return head + "\n" + "\n".join(rows) + ("\n\n" + "\n".join(notes) if notes else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--engine", default="both", choices=["direct", "prefect", "both"])
    ap.add_argument("--work", default="/work/redteam/harness")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--graphlemon", default=str(ROOT), help="checkout, venv or executable of the GraphLemon under test")
    ap.add_argument("--results-md", default="", help="also write the table into this markdown file")
    ap.add_argument(
        "--console-check",
        action="store_true",
        help="afterwards read every run of the engine(s) through `graphlemon console` (tracebacks)",
    )
    ap.add_argument("--no-console", action="store_true", help="with a run: skip the console pass")
    a = ap.parse_args()
    global GL, PY
    GL, PY = resolve_graphlemon(a.graphlemon)
    work = Path(a.work)
    (work / "results").mkdir(parents=True, exist_ok=True)
    if not a.report_only:
        wanted = [s for s in a.only.split(",") if s] or [sc.sid for sc in S]
        unknown = [s for s in wanted if s not in BY_ID]
        if unknown:
            raise SystemExit(f"unknown scenario(s): {unknown}; known: {', '.join(BY_ID)}")
        engines = ["direct", "prefect"] if a.engine == "both" else [a.engine]
        print(f"graphlemon under test: {GL}", flush=True)
        try:
            for engine in engines:
                for sid in wanted:
                    sc = BY_ID[sid]
                    if engine == "prefect" and not sc.prefect:
                        continue
                    bpath = work / "results" / f"S00-{engine}.json"
                    if sid != "S00" and not bpath.exists() and "S00" not in wanted:
                        wanted_first = run_one(BY_ID["S00"], engine, work, None)
                        bpath.write_text(json.dumps(wanted_first, indent=1, default=str))
                    baseline = json.loads(bpath.read_text()) if bpath.exists() else None
                    print(f"== {sid} {engine}: {sc.title}", flush=True)
                    facts = run_one(sc, engine, work, baseline)
                    (work / "results" / f"{sid}-{engine}.json").write_text(json.dumps(facts, indent=1, default=str))
                    print(f"   {facts['status']} {facts['blocked_reason'] or ''} wall {facts['wall_s']}s "
                          f"calls {facts['calls']} tokens {facts['ledger_tokens']} -> "
                          f"{'PASS' if facts['pass'] else 'FAIL'} {facts['verdict']}", flush=True)  # fmt: skip
            if not a.no_console:
                for engine in engines:
                    console_check(work, engine, set(wanted))
        finally:
            if "prefect" in engines:
                r = sh([GL, "server", "stop"], env=base_env(work, "prefect"))
                print("server stop:", r.returncode, r.stdout.strip()[:200], r.stderr.strip()[:200])
    if a.report_only and a.console_check:
        for engine in ["direct", "prefect"] if a.engine == "both" else [a.engine]:
            console_check(work, engine, set(x for x in a.only.split(",") if x) or None)
    table = report(work)
    (work / "results-table.md").write_text(table + "\n")
    if a.results_md:
        Path(a.results_md).write_text(f"# harnessred results\n\ngraphlemon under test: `{GL}`\n\n{table}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
