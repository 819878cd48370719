"""Triage on the labelled corpus (tests/fixtures/triage/: each scenario a run directory replayed in a fresh git
project): the rule path now against the rules of `TODAY` (main before the decider, run from that commit's tree),
per set, with each set's shaped / unshaped status; the seed's keyword classifier beside it; the agent path
against the fake Messages server (plumbing only). Printed, never asserted.

    python benchmarks/bench_triage.py                  every set: right, wrong at >= 0.8, auto-applied (wrong), Brier
    python benchmarks/bench_triage.py --split blind6   one set's table (repeatable)
    python benchmarks/bench_triage.py --ablate         each mechanism module removed in turn: right / wrong >= 0.8 /
                                                       auto-applied wrong, per set
    python benchmarks/bench_triage.py --mechanisms     the decider's evidence: each rule's verdicts on sets it was not
                                                       shaped on (each fresh set at the commit it was written against,
                                                       the held-out set on TODAY's rules), right / fired

A sealed set (`SEALED`: blind6, kept for `BENCH_LIVE_SPLITS=blind6 make bench-live`) is printed as counts only,
never scenario by scenario, so that nobody shapes a rule on its failures. BENCH_SMOKE=1: a few scenarios a set,
no earlier commit, no ablation.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from smoke import SMOKE  # noqa: E402
from triage_paths import CORPUS, right, run_path, spread  # noqa: E402

CATEGORIES = ("contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake")
TODAY = "e263e50e99fb5b14e7ea9c01fa207c0f946f1bc1"  # main before the decider (issue 45): the rules it replaced
SEALED = frozenset({"blind6"})
ROWS = False  # --rows: print every verdict of the unsealed sets chosen
# How docs/triage.md records each set: "shaped" (a rule was written or changed after reading it), "held out" (not
# used to tune, written by the rules' author), "unseen" (no rule was shaped on it; blind6 is also sealed).
STATUS = {
    "dev": "shaped",
    "dev7": "shaped",
    "dev8": "shaped",
    "dev9": "shaped",
    "before": "shaped",
    "after": "shaped",
    "final": "shaped",
    "last": "shaped",
    "blind": "shaped",
    "blind2": "shaped",
    "blind3": "shaped",
    "blind4": "shaped",
    "blind5": "shaped",
    "holdout": "held out",
    "blind6": "unseen",
    "red45": "shaped",
    "red45b": "shaped",
    "red45c": "shaped",
    "red45d": "shaped",
}  # fmt: skip  (red45, red45b: the issue-45 red teams' sets, frozen at 79a36ed and 8febc7b; red45 shaped the rules,
#   red45b, red45c (frozen at 8e9de19) and red45d (at 9d57875) re-measured the decider's mechanisms: decider.MEASURED)
# The rules each fresh set was written against (unseen by them): its "at freeze" column.
FREEZE_COMMITS = {
    "before": "a0194a1890b8e22ba7f209b30039973a089d3b64",
    "after": "e9a37ed79af21b9cdf1f4c4b2724972b38fb55e7",
    "final": "3b7bdfa7b4dc787e0b5eaf6fe7a0b801ced190e0",
    "last": "ffce704747ec66e46f6e9ee4be9c414fa99d2cb1",
    "blind": "f93d80e413d98b19edb811dcd4efabde1d1a005d",
    "blind2": "f93d80e413d98b19edb811dcd4efabde1d1a005d",
    "blind3": "ef5c6795e8f1070655e06cae191f84ffc015d889",
    "blind4": "71d245b3d22e388ae6b8ce2b1092bb643a37da81",
    "blind5": "dfb9d05338106053f810fa10880288e847ac7f40",
    "blind6": "e217f5aaab8f25233558dd656b09612469f5e18a",
    "red45b": "8febc7b3f1ba33a6ab5311b3617cccca765e2005",
    "red45c": "10a53a6a11f806d08da879e17e914474882b30f5",
    "red45d": "7e79fcc5afb5f7929be9adbc5662a949a1f770cf",
}
# Each mechanism module, removed in turn (`--ablate`): the name, and what is patched out.
ABLATIONS: dict[str, tuple[tuple[str, object], ...]] = {
    "voice.py (any voice may speak for the environment)": (
        ("graphlemon.triage.decider.ENVIRONMENT_VOICES", frozenset({"fixture", "unit", "runner", "os", "service", "sdd", "unknown"})),
        ("graphlemon.triage.decider.ENVIRONMENT_TIMES", frozenset({"before", "at", "after", "unknown"})),
    ),
    "environment_signals.py (no environment finding)": (("graphlemon.triage.mechanisms.environment_signals", lambda c, f: []),),
    "uncaught.py (no uncaught-exception finding)": (("graphlemon.triage.mechanisms.uncaught_in_provider", lambda c, f, k: None),),
    "interface_diff.py (no interface finding)": (
        ("graphlemon.triage.mechanisms.compare", lambda c, f, k: []),
        ("graphlemon.triage.mechanisms.unproduced", lambda c, f, k: None),
    ),
    "interface_diff.unproduced (no status_unproduced)": (("graphlemon.triage.mechanisms.unproduced", lambda c, f, k: None),),
    "handlers.py + codescan.py (no code routes)": (("graphlemon.triage.interface_sides.Interfaces.code", []),),
    "callfindings.py (no observed call checked)": (("graphlemon.triage.callfindings.CallFindings.contradicted_calls", lambda s: None),),
    "sdd_element.py (the patch gate reads one statement)": (("graphlemon.triage.patch_gate.other_statements", lambda d, e, u: []),),
    "decider veto (only kept findings count)": (("graphlemon.triage.decider.VETO", False),),
}  # fmt: skip


def split_of(name: str) -> str:
    return json.loads((CORPUS / name / "expected.json").read_text()).get("split", "dev")


def names_of(splits: tuple[str, ...] | None) -> list[str]:
    names = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").is_file())
    names = [n for n in names if splits is None or split_of(n) in splits]
    if SMOKE:
        by: dict[str, list[str]] = {}
        for n in names:
            by.setdefault(split_of(n), []).append(n)
        names = [n for part in by.values() for n in spread(part, 2)]
    return names


def rows_at(commit: str, names: list[str]) -> tuple[list[dict], str]:
    """The rule path at `commit` on the current scenario files (run from that commit's tree), or why it could not run."""
    with tempfile.TemporaryDirectory(prefix="triage-at-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "graphlemon", "benchmarks"], capture_output=True
        )
        if archive.returncode != 0:
            return [], f"commit {commit[:10]} is not in this clone"
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        code = (
            "import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/benchmarks']; import triage_paths as t; "
            "from pathlib import Path; t.CORPUS = Path(sys.argv[2]); print(json.dumps(t.run_path(sys.argv[3:], None)))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, tmp, str(CORPUS), *names], capture_output=True, text=True, cwd=tmp
        )
        if proc.returncode != 0:
            return [], f"the run at {commit[:10]} failed: {proc.stderr.strip().splitlines()[-1:]}"
        return json.loads(proc.stdout.strip().splitlines()[-1]), ""


def table(rows: list[dict]) -> dict:
    auto = [r for r in rows if r["auto"]]
    checked = [r for r in rows if r.get("rerun")]
    return {
        "n": len(rows),
        "right": sum(map(right, rows)),
        "wrong_hi": sum(1 for r in rows if not right(r) and r["conf"] >= 0.8),
        "auto": len(auto),
        "auto_wrong": sum(not right(r) for r in auto),
        "brier": statistics.mean((r["conf"] - right(r)) ** 2 for r in rows) if rows else 0.0,
        "checked": len(checked),
        "confirmed": sum(r["rerun"] == "passed" for r in checked),
        "after": sum(map(right_after, rows)) if rows and "after" in rows[0] else None,
        "after_auto_wrong": sum(1 for r in rows if r.get("after_auto") and not right_after(r)),
    }


def right_after(row: dict) -> bool:
    """Right once the loop's check ran: a re-run that passed confirms the environment; else the verdict it ended with."""
    if row.get("rerun") == "passed":
        return True
    return row.get("after", row["got"]) == row["want"] and row.get("after_units", row["units"]) == row["want_units"]


def cell(t: dict | None) -> str:
    if not t:
        return "-"
    return f"{t['right']}/{t['n']} w{t['wrong_hi']} a{t['auto']}({t['auto_wrong']}) B{t['brier']:.3f}"


def checked_cell(t: dict) -> str:
    """The re-runs the environment hypotheses asked for (of which passed: simulated from the label), and the right
    verdicts once they ran, with the auto-applied wrong ones among the verdicts the loop ended with."""
    return f"r{t['checked']}({t['confirmed']}) v{t['after']}/{t['n']} a{t['after_auto_wrong']}"


def per_set(splits: tuple[str, ...] | None) -> None:
    names = names_of(splits)
    now = run_path(names, None)
    today, why = ([], "smoke: TODAY not run") if SMOKE else rows_at(TODAY, names)
    sets = sorted({r["split"] for r in now}, key=lambda s: (STATUS.get(s, "shaped") != "shaped", s))
    print(f"== the rule path per set: right/n, w = wrong at >= 0.8, a = auto-applied (wrong), B = Brier"
          f"{'; TODAY ' + why if why else ''}")  # fmt: skip
    print("   r = re-runs to check an environment hypothesis (of which passed), v = right once checked (verified),"
          " a = auto-applied wrong after the check")  # fmt: skip
    print(f"{'set':9}{'status':10}{'today (' + TODAY[:7] + ')':>34}{'now':>34}   lost  gained{'checked now':>24}")
    then = {r["name"]: r for r in today}
    for split in sets:
        part = [r for r in now if r["split"] == split]
        old = [then[r["name"]] for r in part if r["name"] in then]
        lost = sum(1 for r in part if r["name"] in then and right(then[r["name"]]) and not right(r))
        gained = sum(1 for r in part if r["name"] in then and not right(then[r["name"]]) and right(r))
        print(f"{split:9}{STATUS.get(split, 'shaped'):10}{cell(table(old)) if old else '-':>34}{cell(table(part)):>34}"
              f"{lost if old else '-':>7}{gained if old else '-':>8}{checked_cell(table(part)):>24}")  # fmt: skip
    print(
        f"{'all':19}{cell(table([then[r['name']] for r in now if r['name'] in then])) if then else '-':>34}{cell(table(now)):>34}"
        f"{'':15}{checked_cell(table(now)):>24}"
    )
    print(
        "  per category now (right / labelled): "
        + ", ".join(
            f"{c} {sum(right(r) for r in now if r['want'] == c)}/{sum(r['want'] == c for r in now)}" for c in CATEGORIES
        )
    )
    rules = Counter(r["rule"] for r in now if r["got"] != "spec_ambiguous" or r["rule"] != "facts:only")
    print("  verdicts by mechanism now: " + ", ".join(f"{k} {v}" for k, v in rules.most_common()))
    open_rows = [r for r in now if r["split"] not in SEALED]
    if ROWS:
        print(
            "  every verdict now (sealed sets not listed): name | labelled | got | conf | auto | rule | re-run | after"
        )
        for r in open_rows:
            print(f"    {r['name']} | {r['want']} {r['want_units']} | {r['got']} {r['units']} | {r['conf']} | "
                  f"{r['auto']} | {r['rule']} | {r.get('rerun') or '-'} | {r.get('after', '-')} {r.get('after_units', '')}"
                  f" auto_after={r.get('after_auto')}")  # fmt: skip
    print("  confident or auto-applied misses now (sealed sets not listed):")
    for r in open_rows:
        if not right(r) and (r["conf"] >= 0.8 or r["auto"]):
            print(f"    {r['name']}: labelled {r['want']} {r['want_units']}, got {r['got']} {r['units']} "
                  f"({r['rule']}, {r['conf']}, auto {r['auto']})")  # fmt: skip


def ablate(splits: tuple[str, ...] | None, only: str | None = None) -> None:
    names = names_of(splits)
    base = run_path(names, None)
    sets = sorted({r["split"] for r in base})
    print("== ablation: each module removed in turn; per set right/n, w = wrong at >= 0.8, a = auto-applied (wrong)")
    print(f"{'module removed':54}" + "".join(f"{s:>14}" for s in sets))
    print(
        f"{'(none: the decider as it is)':54}"
        + "".join(f"{_short(table([r for r in base if r['split'] == s])):>14}" for s in sets)
    )
    for label, patches in ABLATIONS.items():
        if only and only not in label:
            continue
        with ExitStack() as stack:
            for target, value in patches:
                stack.enter_context(mock.patch(target, value))
            rows = run_path(names, None)
        print(f"{label:54}" + "".join(f"{_short(table([r for r in rows if r['split'] == s])):>14}" for s in sets))


def _short(t: dict) -> str:
    return f"{t['right']} w{t['wrong_hi']} a{t['auto_wrong']}"


def mechanisms() -> None:
    """Each rule key's verdicts on sets it was not shaped on: every fresh set (blind6 excepted: it stays sealed) at the
    commit it was written against, and the held-out set on TODAY's rules. Right / fired, all and at >= 0.8."""
    fired: dict[str, list[tuple[str, dict]]] = {}
    for split, commit in FREEZE_COMMITS.items():
        if split in SEALED:
            continue
        rows, why = rows_at(commit, names_of((split,)))
        if why:
            print(f"  {split}: {why}")
        for r in rows:
            fired.setdefault(r.get("rule") or _rule_at(commit, r["name"]), []).append((split, r))
    rows, _ = rows_at(TODAY, names_of(("holdout",)))
    for r in rows:
        fired.setdefault(r.get("rule") or _rule_at(TODAY, r["name"]), []).append(("holdout", r))
    print("== mechanisms on sets they were not shaped on: rule, right/fired, right/fired at >= 0.8, where")
    for rule, hits in sorted(fired.items(), key=lambda kv: -len(kv[1])):
        hi = [(s, r) for s, r in hits if r["conf"] >= 0.8]
        where = ", ".join(sorted({s for s, _ in hits}))
        print(
            f"  {rule:32}{sum(right(r) for _, r in hits):>4}/{len(hits):<4}{sum(right(r) for _, r in hi):>4}/{len(hi):<4} {where}"
        )


def _rule_at(commit: str, name: str) -> str:
    """The rule key an older tree's classify() gave (its run_path rows did not carry it)."""
    with tempfile.TemporaryDirectory(prefix="triage-rule-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "graphlemon", "benchmarks"], capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        code = (
            "import sys, tempfile; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/benchmarks']; import triage_paths as t; "
            "from pathlib import Path; t.CORPUS = Path(sys.argv[2]); from graphlemon.triage.rule_classifier import classify; "
            "from graphlemon.triage.run_context import load_run; d = tempfile.mkdtemp(); "
            "p, e = t.load_scenario(sys.argv[3], Path(d)); print(classify(load_run(p, e['run_id'])).rule)"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, tmp, str(CORPUS), name], capture_output=True, text=True, cwd=tmp
        )
        return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else "?"


# -- the specification's category-classifier.js (seed 001 §7.2), ported line by line ----------------------------

_SEED_INFRA = [
    re.compile(p) for p in ("EADDRINUSE", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "Cannot find module")
] + [re.compile(p, re.IGNORECASE) for p in ("port already in use", "health check timeout")]


def seed_classify(result_json: dict, process_log: str, sdd_text: str) -> str:
    """The seed's heuristic (its impl_bug rule reads `failures[0].expect`, a key its own schema calls `expected`)."""
    score = dict.fromkeys(CATEGORIES, 0)
    if any(r.search(process_log) for r in _SEED_INFRA):
        score["infra_flake"] += 3
    txt = json.dumps(result_json or {}, separators=(",", ":"), ensure_ascii=False).lower()
    tokens = [
        t
        for t in dict.fromkeys(re.findall(r"[a-z]{4,}", txt))
        if t not in ("function", "expected", "received", "stack", "message")
    ]
    if len([t for t in tokens if t not in sdd_text.lower()]) >= 2:
        score["spec_ambiguous"] += 2
    first = ((result_json or {}).get("failures") or [{}])[0]
    got, expect = first.get("got") or {}, first.get("expect") or {}
    if (
        isinstance(got, dict)
        and isinstance(expect, dict)
        and (got.get("status") or 0) >= 500
        and 400 <= (expect.get("status") or 0) < 500
    ):
        score["impl_bug"] += 2
    return sorted(score.items(), key=lambda kv: -kv[1])[0][0]


def seed_side_by_side(splits: tuple[str, ...] | None) -> None:
    rows = []
    for name in names_of(splits):
        run = next((CORPUS / name / ".graphlemon" / "integration" / "runs").iterdir())
        log = (run / "process.log").read_text(errors="replace") if (run / "process.log").exists() else ""
        sdd = "\n".join(
            p.read_text(errors="replace")
            for p in sorted((CORPUS / name / ".graphlemon" / "artifacts" / "sdd").glob("*"))
        )
        want = json.loads((CORPUS / name / "expected.json").read_text())["category"]
        rows.append(seed_classify(json.loads((run / "result.json").read_text()), log, sdd) == want)
    print(f"== the seed's category_classifier (faithful port), category only: {sum(rows)}/{len(rows)}")


def agent_plumbing() -> None:
    """The agent path against the fake Messages server: plumbing only (the fake model submits the rules' opinion
    citing only the failure, so calibration caps it below auto-apply; its accuracy says nothing about a model)."""
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.messages_server import FakeMessagesServer
    from smoke import sized
    from triage_paths import fake_triager, scenario_names, score

    from graphlemon.agents import AgentSettings, build_executor

    names = [n for n in scenario_names() if split_of(n) not in SEALED]
    sample = spread(names, int(os.environ.get("BENCH_TRIAGE_AGENT_SCENARIOS", sized(10, 2))))
    key = "sk-ant-bench-000000000000"
    with FakeMessagesServer(api_key=key) as server:
        server.responder = fake_triager
        settings = AgentSettings(api_key=key, base_url=server.base_url, retry_max=0)
        rows = run_path(sample, lambda: build_executor("anthropic", settings=settings))
    print()
    score(f"agent path, fake server, plumbing only ({len(sample)} scenarios)", rows)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--split", action="append", help="only this set (repeatable), e.g. --split blind6")
    parser.add_argument("--ablate", action="store_true", help="each mechanism module removed in turn")
    parser.add_argument("--only", help="with --ablate: only the rows whose label holds this text")
    parser.add_argument("--mechanisms", action="store_true", help="each rule's verdicts on sets it was not shaped on")
    parser.add_argument("--rows", action="store_true", help="also print every verdict of the chosen unsealed sets")
    args = parser.parse_args()
    ROWS = args.rows
    chosen = tuple(args.split) if args.split else None
    if args.mechanisms:
        mechanisms()
    elif args.ablate:
        ablate(chosen, args.only)
    else:
        per_set(chosen)
        seed_side_by_side(chosen)
        if chosen is None:
            agent_plumbing()
