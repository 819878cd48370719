"""Calibration: a verdict's confidence rests only on evidence that verified.

Each rule below states one general fact:

- the failure itself (the run's result.json) shows *what* broke, never *why*: a verdict whose only
  verified evidence is result.json is capped at `UNSUPPORTED_CAP`, below the auto-apply bar;
- a cited claim that fails verification can only lower confidence: it is capped at `REFUTED_CAP`;
- an environment verdict (`infra_flake`) is a hypothesis whatever its words: capped at `HYPOTHESIS_CAP`, below
  auto-apply; the loop's answer to it is the one re-run that checks it (a pass confirms the environment, the same
  failure again drops the hypothesis);
- `will_auto_apply` needs confidence ≥ `AUTO_APPLY_MIN_CONFIDENCE`, every cited claim verified,
  a category the loop can act on, and no fallback.

Nothing here raises confidence: `calibrate` returns min(proposed, caps).
"""

from __future__ import annotations

from dataclasses import dataclass

from .evidence_check import EvidenceReport
from .verdict import will_auto_apply

UNSUPPORTED_CAP = 0.6
REFUTED_CAP = 0.45
HYPOTHESIS_CAP = 0.7


@dataclass(frozen=True)
class Calibration:
    confidence: float
    verified: int  # cited claims that verified
    refuted: int  # cited claims that did not
    cause_sources: tuple[str, ...]  # verified files other than the run's result.json
    reason: str | None  # why confidence was lowered, if it was

    @property
    def all_verified(self) -> bool:
        return self.refuted == 0 and self.verified > 0


def calibrate(confidence: float, report: EvidenceReport | None, run_rel: str, category: str = "") -> Calibration:
    """The confidence a verdict may carry, given which of its cited claims verified."""
    results = report.results if report is not None else []
    ok = [r for r in results if r.ok]
    refuted = len(results) - len(ok)
    result_json = f"{run_rel}/result.json"
    sources = tuple(sorted({r.hit_file for r in ok if r.hit_file and r.hit_file != result_json}))
    value, reason = confidence, None
    if refuted or not ok:
        value = min(value, REFUTED_CAP)
        reason = f"{refuted} of {len(results)} cited claims did not verify" if results else "no cited claim"
    elif not sources:
        value = min(value, UNSUPPORTED_CAP)
        reason = "only the failure itself (result.json) verified; nothing verified says why it failed"
    if category == "infra_flake" and value > HYPOTHESIS_CAP:
        value = HYPOTHESIS_CAP
        reason = "an environment verdict is a hypothesis until the re-run checks it"
    return Calibration(round(value, 2), len(ok), refuted, sources, reason if value < confidence else None)


def may_auto_apply(category: str, calibration: Calibration, fallback: bool) -> bool:
    """The loop acts without a person only on a calibrated ≥ 0.8 verdict whose every cited claim verified."""
    return calibration.all_verified and will_auto_apply(
        category, calibration.confidence, calibration.all_verified, fallback
    )
