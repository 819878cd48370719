"""Hint quality on the real-suite corpus, judged against a label file written before the hint rules.

Every suite of tests/testrun/test_real_suites.py (installed by `make fixtures`) runs with its planted bug
through the real command line, `graphlemon test --json`, and is judged against
tests/testrun/corpus/labels.json, which says per suite the counts its output proves (and whether the run is
complete) and per failing test what a specific and true hint would say, or that only the facts can be given:

  counts    the summary (passed/failed/skipped) and `complete` equal the label's
  named     the labelled failures that the result names (a failure the label does not know counts as wrong)
  specific  hints that claim something (`hint_confidence` not "facts") and make every claim of the label
            and none of its `wrong_if` phrases
  facts     failures that carry the facts only (`hint_confidence` "facts"; a checkout without the field:
            an empty hint or one of the old generic fallbacks)
  wrong     every other hint: one that claims what the label does not, or claims something for a failure
            whose label is facts-only
  json      stdout held exactly one JSON object

`--code DIR` runs another checkout's graphlemon on the same suites (the "before" column: main's).
BENCH_SMOKE=1: only the three local Python suites (a few seconds).

`--split heldout`: the held-out split instead (tests/testrun/corpus/heldout.json, labels in heldout_labels.json):
eight real projects the corpus never used, planted and labelled from their native output by a red team that had
not read the hint code, frozen before the hint rules changed (heldout/native/ keeps the output each label was read
from). Installed by `make fixtures` like the corpus; not part of pytest's suite; BENCH_SMOKE=1 does not run it.
`--split heldout2`, `--split heldout3`, ...: the later held-out splits (every heldout*.json beside heldout.json, with
its labels), made the same way by one more red team each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "tests" / "testrun" / "corpus" / "labels.json"
# the held-out splits: split name -> (its suites and packages, its frozen labels)
CORPUS = ROOT / "tests" / "testrun" / "corpus"
# every split beside the corpus (heldout.json, heldout2.json, ..: a new split's files are found by their names)
HELDOUT_SPLITS = {
    path.stem: (path, CORPUS / f"{path.stem}_labels.json")
    for path in sorted(CORPUS.glob("heldout*.json"), key=lambda p: (len(p.stem), p.stem))
    if not path.stem.endswith("_labels")
}
SMOKE_SUITES = ("py-reprs", "py-numeric", "py-doctest")
# the generic fallbacks of a checkout that has no `hint_confidence`: they state no finding, so they are facts
OLD_GENERIC = (
    "does not hold: print the value it inspects",
    "does not hold and the values it checks were not reported",
    ": check how that code handles the input this test gives it",
)


def run_cli(code: Path, project: Path, suite, env: dict[str, str]) -> tuple[dict | None, int]:
    """`graphlemon test --json` as a subprocess; (the JSON object, or None when stdout is not exactly one, objects)."""
    argv = [sys.executable, "-m", "graphlemon", "test", *suite.targets, "--project", str(project), "--json",
            "--timeout", f"{suite.timeout:g}"]  # fmt: skip
    if suite.framework_arg:
        argv += ["--framework", suite.framework_arg]
    if suite.command:
        argv += ["--command", suite.command]
    child_env = {**os.environ, **env, "PYTHONPATH": str(code)}
    done = subprocess.run(argv, cwd=project, env=child_env, capture_output=True, text=True, errors="replace")
    return one_json_object(done.stdout)


def one_json_object(stdout: str) -> tuple[dict | None, int]:
    """The JSON object on stdout and how many values stdout holds (1 when it is exactly one object)."""
    decoder, values, at, text = json.JSONDecoder(), [], 0, stdout.strip()
    while at < len(text):
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            return (values[0] if values and isinstance(values[0], dict) else None), len(values) + 1  # chatter
        values.append(value)
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    return (values[0] if len(values) == 1 and isinstance(values[0], dict) else None), len(values)


def verdict(failure: dict, label: dict | None) -> str:
    """specific / facts / wrong for one failure against its label."""
    hint = failure.get("hint") or ""
    confidence = failure.get("hint_confidence")
    facts = confidence == "facts" if confidence is not None else (not hint or any(g in hint for g in OLD_GENERIC))
    if facts:
        return "facts"
    if label is None or label["hint"] != "specific":
        return "wrong"
    claims_made = all(any(alt in hint for alt in _alternatives(claim)) for claim in label.get("claims", []))
    refuted = any(phrase in hint for phrase in label.get("wrong_if", []))
    return "specific" if claims_made and not refuted else "wrong"


def _alternatives(claim: str | list[str]) -> list[str]:
    return [claim] if isinstance(claim, str) else claim


def failure_key(failure: dict) -> str:
    return f"{failure['name']} {failure['subtest']}" if failure.get("subtest") else failure["name"]


def judge(result: dict | None, objects: int, labels: dict) -> dict:
    row = {"json": objects == 1 and result is not None, "counts": False, "named": 0, "labelled": len(labels["failures"]),
           "specific": 0, "facts": 0, "wrong": 0, "details": []}  # fmt: skip
    if result is None:
        row["wrong"] = row["labelled"]
        return row
    s = result["summary"]
    complete = result.get("complete", not result["timed_out"])  # a checkout without the field: not timed out
    row["counts"] = [s["passed"], s["failed"], s["skipped"]] == labels["counts"] and complete == labels["complete"]
    if not row["counts"]:
        row["details"].append(f"counts {s['passed']}/{s['failed']}/{s['skipped']} complete={complete}, "
                              f"label {labels['counts']} complete={labels['complete']}")  # fmt: skip
    seen = set()
    for failure in result["failures"]:
        key = failure_key(failure)
        if key not in labels["failures"]:  # same-named tests in two files are labelled `NAME @FILE`
            key = f"{key} @{failure.get('file')}"
        label = labels["failures"].get(key)
        if label is not None and key not in seen:
            seen.add(key)
            row["named"] += 1
            if "line" in label and failure.get("line") != label["line"]:
                row["details"].append(f"{key}: line {failure.get('line')}, label {label['line']}")
        kind = verdict(failure, label)
        row[kind] += 1
        if kind == "wrong":
            row["details"].append(f"wrong: {key}: {failure.get('hint', '')[:160]!r}")
    return row


def measure(code: Path, suites, corpus, labels: dict, dump: Path | None = None) -> None:
    print(f"graphlemon from {code}")
    dumped: dict[str, list[dict]] = {}
    print(
        f"{'suite':<22} {'failures':>8} {'counts':>7} {'named':>7} {'specific':>9} {'facts':>6} {'wrong':>6} {'json':>5}"
    )
    total = {"failures": 0, "named": 0, "specific": 0, "facts": 0, "wrong": 0, "counts": 0, "json": 0, "suites": 0}
    for suite in suites:
        label = labels[suite.id]
        with tempfile.TemporaryDirectory() as tmp:
            project = corpus._copy(suite, Path(tmp))
            corpus._plant(project, suite)
            env = {**corpus.ENV, "CARGO_TARGET_DIR": str(Path(tmp) / "cargo-target")}
            result, objects = run_cli(code, project, suite, env)
        row = judge(result, objects, label)
        if dump is not None:
            dumped[suite.id] = [_dumped(f, label) for f in (result or {}).get("failures", [])]
        n = row["specific"] + row["facts"] + row["wrong"]
        print(f"{suite.id:<22} {n:8d} {'yes' if row['counts'] else 'NO':>7} {row['named']:>3}/{row['labelled']:<3} "
              f"{row['specific']:9d} {row['facts']:6d} {row['wrong']:6d} {'yes' if row['json'] else 'NO':>5}")  # fmt: skip
        for line in row["details"][:6]:
            print(f"    {line}")
        for key in ("named", "specific", "facts", "wrong"):
            total[key] += row[key]
        total["failures"] += n
        total["counts"] += row["counts"]
        total["json"] += row["json"]
        total["suites"] += 1
    n = total["failures"] or 1
    print(f"{'all':<22} {total['failures']:8d} {total['counts']:>3}/{total['suites']:<3} {total['named']:7d} "
          f"{total['specific']:9d} {total['facts']:6d} {total['wrong']:6d} {total['json']:>3}/{total['suites']}")  # fmt: skip
    print(f"specific and true {total['specific'] / n:.0%}, facts only {total['facts'] / n:.0%}, "
          f"wrong {total['wrong'] / n:.0%} of {total['failures']} failures")  # fmt: skip
    if dump is not None:
        dump.write_text(json.dumps(dumped, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"every failure's hint: {dump}")


def _dumped(failure: dict, labels: dict) -> dict:
    """One failure as the result gave it, with the bench's verdict (for reading every hint whole, by hand)."""
    key = failure_key(failure)
    if key not in labels["failures"]:
        key = f"{key} @{failure.get('file')}"
    label = labels["failures"].get(key)
    keep = ("name", "subtest", "file", "line", "message", "expected", "got", "hint_confidence", "hint")
    return {**{k: failure.get(k) for k in keep}, "verdict": verdict(failure, label), "label": label}


def heldout_suites(corpus, split: str = "heldout") -> list:
    """A held-out split's suites (a heldout*.json) as the corpus's Suite records: every plant applied, in order."""
    suites = []
    for s in json.loads(HELDOUT_SPLITS[split][0].read_text(encoding="utf-8"))["suites"]:
        (file, before, after), *more = s["plants"]
        command = s.get("command")
        suites.append(corpus.Suite(
            s["id"], s["package"], tuple(s["green"]), tuple(s["bug"]), file, before, after, s["framework"],
            targets=list(s.get("targets", [])), command=command.replace("{python}", sys.executable) if command else None,
            framework_arg=s.get("framework_arg"), more_bugs=tuple(tuple(m) for m in more),
            timeout=float(s.get("timeout", 300.0))))  # fmt: skip
    return suites


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--code", type=Path, default=ROOT, help="a checkout whose graphlemon to measure (default: this one)"
    )
    parser.add_argument(
        "--split",
        choices=("corpus", *HELDOUT_SPLITS),
        default="corpus",
        help=f"corpus: the labelled real-suite corpus (default); heldout .. {[*HELDOUT_SPLITS][-1]}: the frozen held-out splits",
    )
    parser.add_argument("--dump", type=Path, help="write every failure's hint, facts and verdict to this JSON file")
    parser.add_argument("suites", nargs="*", help="suite ids (default: all; BENCH_SMOKE=1: the local Python ones)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.testrun import test_real_suites as corpus  # noqa: E402

    if args.split in HELDOUT_SPLITS:
        if os.environ.get("BENCH_SMOKE") == "1":
            print(f"the held-out split is not run at smoke size (BENCH_SMOKE=1): run it with --split {args.split}")
            return
        all_suites = heldout_suites(corpus, args.split)
        labels = json.loads(HELDOUT_SPLITS[args.split][1].read_text(encoding="utf-8"))["suites"]
        wanted = args.suites or [s.id for s in all_suites]
    else:
        all_suites = corpus.SUITES
        labels = json.loads(LABELS.read_text(encoding="utf-8"))["suites"]
        wanted = args.suites or (SMOKE_SUITES if os.environ.get("BENCH_SMOKE") == "1" else [s.id for s in all_suites])
    suites = [s for s in all_suites if s.id in wanted]
    missing = [s.package for s in suites if not (corpus.CACHE / s.package / ".graphlemon-corpus-ok").is_file()]
    if missing:
        sys.exit(f"error[INVALID_PARAM]: the corpus is not installed ({', '.join(missing)}): run `make fixtures`")
    measure(args.code.resolve(), suites, corpus, labels, args.dump)


if __name__ == "__main__":
    main()
