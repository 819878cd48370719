"""Issue 23 item 8: how good are expected/got and the hints on real failures (the corpus with its planted bugs)?

For every suite of tests/testrun/test_real_suites.py (installed by `make fixtures`), run with its
planted bug, and print per suite and in total:
  values    = share of failures with both expected and got filled
  specific  = share of failures whose hint is not one of the generic fallbacks
              ("The check at … does not hold: print the value it inspects", "… was raised …: check how
              that code handles the input", "… the values it checks were not reported")
  contra    = hints a check below finds contradicted by the failure's own values (goal: 0), e.g.
              "differs only in letter case" for values that differ otherwise, "Off by one" for numbers
              two apart, "first differs at character N" where they differ elsewhere, any value hint
              for expected == got, or "handle that case instead of panicking" (advice for a panic of
              the code under test) for a failed assertion located in the test code (tests/)
`--code DIR` runs another checkout's graphlemon (e.g. main's, for the before/after figures) on the
same suites: `python benchmarks/bench_hint_quality.py --code /path/to/main`.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from pathlib import Path

from smoke import sized

ROOT = Path(__file__).resolve().parents[1]
SMOKE_SUITES = ("unittest", "tape-tap13")  # BENCH_SMOKE=1: one Python and one JavaScript suite, nothing to build
GENERIC = (
    "does not hold: print the value it inspects",
    "does not hold and the values it checks were not reported",
    ": check how that code handles the input this test gives it",
)


def _number(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`" else text


def contradictions(failure) -> list[str]:
    """What the hint claims that the failure's own (whole) expected/got refute."""
    hint, exp, got = failure.hint, failure.expected, failure.got
    found: list[str] = []
    if "handle that case instead of panicking" in hint and failure.file and "tests" in Path(failure.file).parts:
        found.append("panic advice for an assertion in test code")
    if exp is None or got is None:
        return found
    e, g = _unquote(exp), _unquote(got)
    if exp == got and any(k in hint for k in ("differs", "Off by one", "cut short", "extra content", "lacks")):
        found.append("a difference is hinted for equal values")
    if "differs only in letter case" in hint and not (e.lower() == g.lower() and e != g):
        found.append("letter case")
    if "differs only in whitespace" in hint and "".join(e.split()) != "".join(g.split()):
        found.append("whitespace")
    ne, ng = _number(exp), _number(got)
    if "Off by one" in hint and "Field `" not in hint and (ne is None or ng is None or abs(ne - ng) != 1):
        found.append("off by one")
    if "stayed at zero" in hint and ng != 0:
        found.append("zero")
    position = re.search(r"first differs at character (\d+)", hint)
    shown_at = failure.difference_at  # where the whole values first differ (1-based, in the shown text)
    if position and "Field `" not in hint and "diff's first change" not in hint and shown_at is not None:
        if int(position.group(1)) not in (shown_at, shown_at - 1):  # the hint counts inside the quotes
            found.append(f"position {position.group(1)}, values differ at {shown_at}")
    field = re.match(r"Field `[^`]+` differs \((.+?) wanted, (.+?) produced\)", hint)
    if field and (field.group(1).rstrip("…") not in exp or field.group(2).rstrip("…") not in got):
        found.append("field values")
    return found


def measure(suites, copy, plant, run) -> None:
    print(f"{'suite':<22} {'failures':>8} {'values':>8} {'specific':>9} {'contra':>7}")
    totals = [0, 0, 0, 0]
    for suite in suites:
        with tempfile.TemporaryDirectory() as tmp:
            project = copy(suite, Path(tmp))
            plant(project, suite)
            result = run(project, suite)
        failures = result.failures
        n = len(failures)
        values = sum(1 for f in failures if f.expected is not None and f.got is not None)
        specific = sum(1 for f in failures if f.hint and not any(marker in f.hint for marker in GENERIC))
        contra = [(f.name, c) for f in failures for c in contradictions(f)]
        for i, count in enumerate((n, values, specific, len(contra))):
            totals[i] += count
        print(f"{suite.id:<22} {n:8d} {values / n:8.0%} {specific / n:9.0%} {len(contra):7d}" if n else f"{suite.id:<22} 0")
        for name, claim in contra[:3]:
            print(f"    contradicted: {name}: {claim}")
    n, values, specific, contra = totals
    print(f"{'all':<22} {n:8d} {values / n:8.0%} {specific / n:9.0%} {contra:7d}  "
          f"(values {values}/{n}, specific {specific}/{n})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, help="a checkout whose graphlemon package to measure (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.code:
        sys.path.insert(0, str(args.code.resolve()))
    import graphlemon  # noqa: E402
    from tests.testrun import test_real_suites as corpus  # noqa: E402

    missing = [s.package for s in corpus.SUITES if not (corpus.CACHE / s.package / ".graphlemon-corpus-ok").is_file()]
    if missing:
        sys.exit(f"error[INVALID_PARAM]: the corpus is not installed ({', '.join(missing)}): run `make fixtures`")
    print(f"graphlemon from {Path(graphlemon.__file__).parent}")
    suites = sized(corpus.SUITES, [s for s in corpus.SUITES if s.id in SMOKE_SUITES])
    measure(suites, corpus._copy, corpus._plant, corpus._run)


if __name__ == "__main__":
    main()
