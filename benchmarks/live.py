"""`make bench-live`: the model path, measured against the real Anthropic API. Costs money; never in CI.

(a) the snake goal end to end with the anthropic backend: status, rounds, bugs, tokens, cost, wall time,
    cache-hit rate (cache reads / all input tokens);
(b) the triage corpus through the agent path (the bug-triager with the rules as its tools), beside the
    rule path: accuracy per split, reliability table, Brier score, auto-applied verdicts that were wrong.

Skipped, exit 0, with a message, when ANTHROPIC_API_KEY is absent or CI is set. Knobs (environment):
BENCH_LIVE_PARTS=snake,triage   BENCH_LIVE_SCENARIOS=N (first N of the corpus; default all)
BENCH_LIVE_SPLITS=blind6 (only the scenarios of these splits, comma-separated: a set no rule was tuned on measures
the agent on cases it never saw, e.g. blind6, written after the rules' last freeze and never tuned on)
BENCH_LIVE_BUDGET_USD=5 (the snake run's budget guardrail)   GRAPHLEMON_MODEL / ANTHROPIC_BASE_URL as usual.
`--fake` runs (b) against the local fake Messages server instead (the plumbing test uses it; numbers
from it say nothing about a model).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")
GIT = ["git", "-c", "user.name=GraphLemon bench", "-c", "user.email=bench@graphlemon.local"]


def skip_reason(env: dict[str, str], fake: bool) -> str | None:
    if env.get("CI"):
        return "bench-live skipped: CI is set (live model calls never run in CI)"
    if not fake and not env.get("ANTHROPIC_API_KEY"):
        return (
            "bench-live skipped: ANTHROPIC_API_KEY is not set. It calls the real Messages API and costs money; "
            "export ANTHROPIC_API_KEY=... and run `make bench-live` again."
        )
    return None


def ledger_summary(repo: Path) -> dict:
    """Rounds, bugs, tokens, cost and cache-hit rate of a project, read from its ledger."""
    state = repo / ".graphlemon"

    def lines(name: str) -> list[dict]:
        path = state / name
        if not path.is_file():
            return []
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]

    usage = lines("usage.ndjson")
    fresh = sum(u.get("input_tokens", 0) for u in usage)
    read = sum(u.get("cache_read_tokens", 0) for u in usage)
    written = sum(u.get("cache_write_tokens", 0) for u in usage)
    rounds = {n.get("loop_round") for n in lines("nodes.ndjson") if n.get("loop_round") is not None}
    return {
        "model_calls": len(usage),
        "input_tokens": fresh,
        "output_tokens": sum(u.get("output_tokens", 0) for u in usage),
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "cache_hit_rate": round(read / (fresh + read + written), 3) if fresh + read + written else 0.0,
        "cost_usd": round(sum(u.get("cost_usd", 0.0) for u in usage), 4),
        "rounds": len(rounds),
        "bugs": len({b.get("bug_id") for b in lines("bugs.ndjson") if b.get("bug_id")}),
        "triages": len(lines("triage.ndjson")),
    }


def snake(budget_usd: float) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-live-snake-"))
    repo = work / "snake"
    shutil.copytree(ROOT / "examples" / "snake" / "repo", repo)
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "empty snake package"], cwd=repo, check=True)
    subprocess.run([GRAPHLEMON, "init", str(repo)], cwd=work, check=True, capture_output=True)
    started = time.monotonic()
    proc = subprocess.run(
        [GRAPHLEMON, "run", "Implement a snake game", "--project", str(repo), "--executor", "anthropic",
         "--budget-usd", str(budget_usd), "--quiet", "--json"],
        cwd=repo, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.monotonic() - started
    try:
        status = json.loads(proc.stdout).get("status")
    except ValueError:
        status = f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    return {"status": status, "wall_s": round(wall, 1), "project": str(repo), **ledger_summary(repo)}


def triage(fake: bool, limit: int | None, splits: set[str] | None = None) -> dict:
    from triage_paths import CORPUS, fake_triager, run_path, scenario_names, score

    from graphlemon.agents import AgentSettings, build_executor

    names = scenario_names()
    if splits:
        names = [n for n in names if json.loads((CORPUS / n / "expected.json").read_text()).get("split") in splits]
        if not names:
            raise SystemExit(f"bench-live: no scenario has a split in {sorted(splits)} (see tests/fixtures/triage)")
    names = names[:limit] if limit else names
    rules = score("rules (offline path)", run_path(names, None))
    if fake:
        from fakes.messages_server import FakeMessagesServer

        key = "sk-ant-fake-000000000000"
        with FakeMessagesServer(api_key=key) as server:
            server.responder = fake_triager
            settings = AgentSettings(api_key=key, base_url=server.base_url, retry_max=0)
            agent = score("agent path (FAKE server: plumbing only)", run_path(names, lambda: build_executor("anthropic", settings=settings)))  # fmt: skip
    else:
        settings = AgentSettings.from_env()
        agent = score(
            f"agent path ({settings.default_model})", run_path(names, lambda: build_executor("anthropic", settings=settings))
        )  # fmt: skip
    return {"rules": rules, "agent": agent}


def main(argv: list[str]) -> int:
    fake = "--fake" in argv
    reason = skip_reason(dict(os.environ), fake)
    if reason:
        print(reason)
        return 0
    parts = os.environ.get("BENCH_LIVE_PARTS", "triage" if fake else "snake,triage").split(",")
    limit = int(os.environ["BENCH_LIVE_SCENARIOS"]) if os.environ.get("BENCH_LIVE_SCENARIOS") else None
    splits = {s.strip() for s in os.environ.get("BENCH_LIVE_SPLITS", "").split(",") if s.strip()} or None
    out: dict = {}
    if "snake" in parts and not fake:
        print("== (a) snake goal end to end, anthropic backend")
        out["snake"] = snake(float(os.environ.get("BENCH_LIVE_BUDGET_USD", "5")))
        for k, v in out["snake"].items():
            print(f"  {k}: {v}")
    if "triage" in parts:
        print("== (b) triage corpus: agent path beside the rule path")
        out["triage"] = triage(fake, limit, splits)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
