"""`make bench-live`'s plumbing, offline: the skip without a key, the triage part against the fake Messages
server (the real SDK, the bug-triager's tools, calibration), and the ledger summary of the snake part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "benchmarks" / "live.py"


def env_without_key(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CI")}
    return {**env, **extra}


@pytest.mark.system
def test_make_bench_live_without_a_key_skips_with_a_message():
    proc = subprocess.run(
        ["make", "-s", "bench-live"], cwd=ROOT, env=env_without_key(), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bench-live skipped: ANTHROPIC_API_KEY is not set")


@pytest.mark.system
def test_bench_live_never_runs_in_ci():
    proc = subprocess.run(
        [sys.executable, str(LIVE)], env=env_without_key(CI="true", ANTHROPIC_API_KEY="sk-ant-x"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0 and "CI is set" in proc.stdout


@pytest.mark.system
def test_the_triage_part_runs_the_agent_path_against_the_fake_server():
    proc = subprocess.run(
        [sys.executable, str(LIVE), "--fake"], env=env_without_key(BENCH_LIVE_SCENARIOS="3"),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "agent path (FAKE server: plumbing only)" in proc.stdout and "reliability" in proc.stdout
    result = json.loads(proc.stdout.strip().splitlines()[-1])["triage"]
    assert result["rules"]["n"] == result["agent"]["n"] == 3
    assert result["agent"]["tokens"] > 0 and result["rules"]["tokens"] == 0
    # the fake model cites only the failure itself: calibration keeps every such verdict from auto-applying
    assert result["agent"]["auto"] == 0 and result["agent"]["auto_wrong"] == 0


@pytest.mark.system
def test_the_triage_part_measures_one_split_alone():
    proc = subprocess.run(
        [sys.executable, str(LIVE), "--fake"], env=env_without_key(BENCH_LIVE_SPLITS="blind6", BENCH_LIVE_SCENARIOS="2"),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])["triage"]
    assert result["rules"]["n"] == result["agent"]["n"] == 2
    assert "split blind6" in proc.stdout and "split blind5" not in proc.stdout
    unknown = subprocess.run(
        [sys.executable, str(LIVE), "--fake"], env=env_without_key(BENCH_LIVE_SPLITS="no-such-split"),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert unknown.returncode == 1 and "no scenario has a split in ['no-such-split']" in unknown.stderr


def test_the_snake_part_reads_rounds_bugs_tokens_cost_and_cache_hits_from_the_ledger(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from live import ledger_summary

    state = tmp_path / ".graphlemon"
    state.mkdir()
    usage = [
        {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_read_tokens": 300,
            "cache_write_tokens": 100,
            "cost_usd": 0.01,
        },
        {"input_tokens": 50, "output_tokens": 5, "cache_read_tokens": 450, "cache_write_tokens": 0, "cost_usd": 0.02},
    ]
    (state / "usage.ndjson").write_text("".join(json.dumps(u) + "\n" for u in usage))
    (state / "nodes.ndjson").write_text('{"loop_round": 0}\n{"loop_round": 1}\n{"loop_round": 1}\n')
    (state / "bugs.ndjson").write_text('{"bug_id": "b1"}\n{"bug_id": "b1"}\n{"bug_id": "b2"}\n')
    s = ledger_summary(tmp_path)
    assert (s["model_calls"], s["rounds"], s["bugs"], s["cost_usd"]) == (2, 2, 2, 0.03)
    assert s["cache_hit_rate"] == round(750 / 1000, 3)
