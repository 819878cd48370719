"""The four monitoring signals and the two health-check signals, judged by pure functions (tested as tables).

* health_endpoint: GET /healthz answered 200 with the expected commit;
* process_restarts: the instance's process is the one that was started (same PID, alive): restarts = 0;
* task_error_rate: of the work-node executions that ended inside the window, the share that failed with an
  error code (an engine error, not a red test), at most `task_error_rate_threshold`;
* validator_approval_rate: the share of validation runs that passed inside the window, within
  `VALIDATOR_RATE_DEVIATION_THRESHOLD` of its historical baseline (the runs before the window);
* canary_task (health check only): the scripted snake demo run by the candidate ended as expected.

A rate with too few samples (fewer than `min_samples`) is reported with its value, `judged` false, and counted
ok: no evidence either way is not an anomaly; `deploy status` lists the signals that lacked data all window.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from ..models import DeployHealthSignal, DeployPhase, NodeEvent, RunRecord

VALIDATOR_RATE_DEVIATION_THRESHOLD = 0.2  # REQ-15: |window rate - baseline| above this is an anomaly


class Thresholds(BaseModel):
    validator_rate_deviation_threshold: float = Field(default=VALIDATOR_RATE_DEVIATION_THRESHOLD, gt=0, le=1)
    task_error_rate_threshold: float = Field(default=0.2, ge=0, le=1)
    min_samples: int = Field(default=3, ge=1)


class HealthReading(BaseModel):
    """What one GET /healthz gave (status None: no answer)."""

    status: int | None = None
    commit: str | None = None
    pid: int | None = None
    error: str | None = None


def health_endpoint(dep_id: str, phase: DeployPhase, reading: HealthReading, commit: str) -> DeployHealthSignal:
    ok = reading.status == 200 and reading.commit == commit
    if reading.status is None:
        detail = f"no answer: {reading.error}"
    elif reading.commit != commit:
        detail = f"HTTP {reading.status}, serving commit {reading.commit!r}, expected {commit!r}"
    else:
        detail = f"HTTP {reading.status}, commit {commit[:12]}"
    return DeployHealthSignal(deployment_id=dep_id, phase=phase, signal="health_endpoint", ok=ok,
                              value=reading.status, detail=detail)  # fmt: skip


def process_restarts(dep_id: str, phase: DeployPhase, started_pid: int, alive: bool, reported_pid: int | None):
    """Restarted = the process that was started is gone, or another process answers on its port."""
    restarts = 0 if alive and reported_pid in (None, started_pid) else 1
    if not alive:
        detail = f"process {started_pid} is gone"
    elif restarts:
        detail = f"process {started_pid} was replaced by {reported_pid}"
    else:
        detail = f"process {started_pid} running"
    return DeployHealthSignal(deployment_id=dep_id, phase=phase, signal="process_restarts", ok=restarts == 0,
                              value=restarts, threshold=0, detail=detail)  # fmt: skip


def task_error_rate(dep_id: str, nodes: Iterable[NodeEvent], since: datetime, th: Thresholds) -> DeployHealthSignal:
    ended = [n for n in nodes if n.ts >= since and n.event == "transition" and n.status in ("done", "failed")]
    errors = [n for n in ended if n.status == "failed" and n.error_code]
    rate = len(errors) / len(ended) if ended else None
    judged = len(ended) >= th.min_samples
    ok = not judged or rate is None or rate <= th.task_error_rate_threshold
    detail = f"{len(errors)} of {len(ended)} node executions failed with an error"
    if not judged:
        detail += f" (fewer than {th.min_samples}: not judged)"
    return DeployHealthSignal(deployment_id=dep_id, phase="monitoring", signal="task_error_rate", ok=ok, value=rate,
                              threshold=th.task_error_rate_threshold, detail=detail, judged=judged)  # fmt: skip


def approval_rate(runs: Iterable[RunRecord]) -> tuple[float | None, int]:
    validations = [r for r in runs if r.scope == "validation"]
    if not validations:
        return None, 0
    return sum(r.ok for r in validations) / len(validations), len(validations)


def validator_approval_rate(dep_id: str, runs: list[RunRecord], since: datetime, th: Thresholds) -> DeployHealthSignal:
    baseline, n_before = approval_rate(r for r in runs if r.ts < since)
    rate, n_window = approval_rate(r for r in runs if r.ts >= since)
    judged = baseline is not None and rate is not None and n_window >= th.min_samples
    deviation = abs(rate - baseline) if judged else None  # type: ignore[operator]
    ok = not judged or deviation <= th.validator_rate_deviation_threshold  # type: ignore[operator]
    if judged:
        detail = (f"{rate:.2f} over {n_window} validations vs baseline {baseline:.2f} over {n_before}: "
                  f"deviation {deviation:.2f}, threshold {th.validator_rate_deviation_threshold:.2f}")  # fmt: skip
    else:
        detail = f"{n_window} validations in the window, {n_before} before it: not judged (needs a baseline and {th.min_samples})"
    return DeployHealthSignal(deployment_id=dep_id, phase="monitoring", signal="validator_approval_rate", ok=ok,
                              value=rate, baseline=baseline, threshold=th.validator_rate_deviation_threshold,
                              detail=detail, judged=judged)  # fmt: skip


def anomalies(signals: Iterable[DeployHealthSignal]) -> list[DeployHealthSignal]:
    return [s for s in signals if not s.ok]


def lacking_data(signals: Iterable[DeployHealthSignal]) -> list[str]:
    """The monitoring signals none of whose readings could be judged (too few samples every time): they could not
    have fired, and `deploy status` says so rather than showing them as healthy."""
    seen: dict[str, bool] = {}
    for s in signals:
        if s.phase == "monitoring":
            seen[s.signal] = seen.get(s.signal, False) or s.judged
    return sorted(name for name, judged in seen.items() if not judged)
