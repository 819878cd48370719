"""Run the triage corpus through one path (the rules, or the agent through an executor) and score it.

Shared by `bench_triage.py` (rules; the agent path against the fake Messages server: plumbing only) and
`live_triage.py` (`make bench-live`: the agent path against the real API, beside the rules).
A row per scenario: labelled vs predicted category and units, confidence, will_auto_apply, fallback, tokens,
wall time. `score()` prints accuracy per split, a reliability table (confidence band → accuracy) and the
Brier score of the confidence as a probability of being right.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from smoke import sized  # noqa: E402

from graphlemon.project import init_project  # noqa: E402
from graphlemon.triage import triage_run  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "triage"
BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))
SMOKE_SCENARIOS = 6  # BENCH_SMOKE=1: this many scenarios, spread over the corpus


def scenario_names() -> list[str]:
    names = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").is_file())
    return sized(names, spread(names, SMOKE_SCENARIOS))


def spread(names: list[str], n: int) -> list[str]:
    """`n` of `names` (all of them if fewer), evenly spaced."""
    n = max(1, min(n, len(names)))
    return [names[i * len(names) // n] for i in range(n)]


def load_scenario(name: str, base: Path):
    root = base / name
    shutil.copytree(CORPUS / name, root)
    expected = json.loads((root / "expected.json").read_text())
    (root / "expected.json").unlink()  # the triager never sees the label
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return init_project(root).project, expected


def run_path(names: list[str], make_executor: Callable[[], Any] | None) -> list[dict]:
    """Triage each scenario in a fresh copy; `make_executor` None is the rule path."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="triage-paths-") as tmp:
        for name in names:
            project, expected = load_scenario(name, Path(tmp))
            started = time.perf_counter()
            outcome = triage_run(project, expected["run_id"], executor=make_executor() if make_executor else None)
            r = outcome.record
            rows.append(
                {
                    "name": name,
                    "split": expected.get("split", "dev"),
                    "want": expected["category"],
                    "want_units": sorted(expected["affected_units"]),
                    "got": r.category,
                    "units": sorted(r.affected_units),
                    "conf": r.confidence,
                    "auto": r.will_auto_apply,
                    "verified": r.evidence_verified,
                    "fallback": r.fallback,
                    "tokens": r.tokens_used,
                    "ms": (time.perf_counter() - started) * 1000,
                    "method": outcome.output.method,
                    "rule": outcome.rule,
                    **rerun_check(project, expected, r, make_executor),
                }
            )
    return rows


def rerun_check(project, expected: dict, record, make_executor) -> dict:
    """What the loop does with an environment hypothesis: one re-run to check it. Simulated from the label (the
    world the scenario describes): an environment failure passes when re-run; any other fails the same way, and the
    failure is triaged again (the real path: a second run of the same failure, history.retriage drops the
    environment). `after` is the verdict the loop ends with: the first one, or what the check left."""
    first = {"after": record.category, "after_units": sorted(record.affected_units), "after_conf": record.confidence,
             "after_auto": record.will_auto_apply, "rerun": None}  # fmt: skip
    if record.category != "infra_flake":
        return first
    if expected["category"] == "infra_flake":
        return {**first, "rerun": "passed"}
    runs = project.root / ".graphlemon" / "integration" / "runs"
    again = f"{expected['run_id']}-rerun"
    shutil.copytree(runs / expected["run_id"], runs / again, ignore=shutil.ignore_patterns("triage.json", "history"))
    result = json.loads((runs / again / "result.json").read_text())
    (runs / again / "result.json").write_text(json.dumps({**result, "run_id": again}))
    second = triage_run(project, again, executor=make_executor() if make_executor else None).record
    return {"after": second.category, "after_units": sorted(second.affected_units), "after_conf": second.confidence,
            "after_auto": second.will_auto_apply, "rerun": "failed the same way"}  # fmt: skip


def right(row: dict) -> bool:
    return row["got"] == row["want"] and row["units"] == row["want_units"]


def score(label: str, rows: list[dict]) -> dict:
    """Print accuracy, the reliability table and the Brier score for one path; return the numbers."""
    n = len(rows)
    ok = sum(right(r) for r in rows)
    brier = statistics.mean((r["conf"] - right(r)) ** 2 for r in rows) if rows else 0.0
    auto = [r for r in rows if r["auto"]]
    auto_wrong = [r for r in auto if not right(r)]
    print(f"{label}: {_pct(ok, n)} right (category + affected units); Brier {brier:.3f}")
    for split in sorted({r["split"] for r in rows}):
        part = [r for r in rows if r["split"] == split]
        print(f"  split {split:8} {_pct(sum(right(r) for r in part), len(part))}")
    print(f"  auto-applied {len(auto)}, of which wrong {len(auto_wrong)}; fallbacks {sum(r['fallback'] for r in rows)}")
    print("  reliability: band, verdicts, accuracy, mean confidence")
    for lo, hi in BANDS:
        band = [r for r in rows if lo <= r["conf"] < hi]
        if band:
            mean = statistics.mean(r["conf"] for r in band)
            acc = _pct(sum(right(r) for r in band), len(band))
            print(f"    [{lo:.1f}, {min(hi, 1.0):.1f}): {len(band):3} {acc:>13}  {mean:.2f}")
    tokens = sum(r["tokens"] for r in rows)
    ms = statistics.mean(r["ms"] for r in rows) if rows else 0.0
    print(f"  tokens {tokens}, mean wall time per scenario {ms:.0f} ms")
    for r in auto_wrong:
        print(f"  AUTO-APPLIED AND WRONG: {r['name']}: {r['got']} {r['units']} at {r['conf']} (labelled {r['want']})")
    return {"n": n, "right": ok, "brier": brier, "auto": len(auto), "auto_wrong": len(auto_wrong), "tokens": tokens}


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}% ({k}/{n})" if n else "-"


# -- a fake model for the plumbing: it asks the rules and the signal scan, then submits what they said -------


def fake_triager(body: dict):
    """A Messages-API responder that drives the bug-triager's tools; its verdicts say nothing of model quality."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.messages_server import tool_use

    messages = body["messages"]
    results = [
        block
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    run_id = _run_id(messages)
    if len(results) == 0:
        todo = [{"title": t, "status": "done"} for t in ("evidence", "classify", "affected", "patch", "write")]
        return tool_use("write_todolist", {"items": todo})
    if len(results) == 1:
        return tool_use("category_classifier", {"run_id": run_id})
    if len(results) == 2:
        return tool_use("scan_signals", {"run_id": run_id})
    hint = json.loads(_text(results[1]))
    failure = f".graphlemon/integration/runs/{run_id}/result.json"
    case = _case(messages)
    verdict = {
        "run_id": run_id,
        "root_cause": hint["root_cause"],
        "category": hint["category"],
        "affected_units": hint["affected_units"],
        "proposed_sdd_patch": None,
        "confidence": hint["confidence"],
        "evidence": [f'{failure}: "case": "{case}"'],
        "l3_question": "What should happen?" if hint["category"] == "spec_ambiguous" else None,
    }
    if hint["category"] == "contract_mismatch":
        unit = (hint["affected_units"] or ["?"])[0]
        verdict["proposed_sdd_patch"] = {
            "target_section": f"#unit-{unit}",
            "op": "update_contract",
            "text": f"align {unit}'s contract.json with the SDD for the failing case",
        }
    return tool_use("submit_output", verdict)


def _run_id(messages: list[dict]) -> str:
    import re

    text = json.dumps(messages[0]["content"])
    m = re.search(r"run_id: ([\w.-]+)", text)
    return m.group(1) if m else ""


def _case(messages: list[dict]) -> str:
    import re

    text = json.dumps(messages[0]["content"])
    m = re.search(r'\\"case\\": \\"([^"\\]+)', text)
    return m.group(1) if m else ""


def _text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content or "")
