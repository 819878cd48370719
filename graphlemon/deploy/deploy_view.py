"""What the console's deploy page shows (v_deploy_supervisor): the deployments, one deployment's state machine
(every state, the ones it went through, where it is), its signals and its timeline. Ledger reads only, plus the
supervisor's state file for the live instance."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from .. import lifecycle
from ..ledger import Ledger
from ..models import DeploymentStatus
from .deployments import DeploymentBook
from .health_signals import lacking_data

HAPPY_PATH = ("staged", "candidate_starting", "health_check_running", "health_check_passed", "cutover_in_progress",
              "live", "monitoring", "monitoring_window_clean", "finalized")  # fmt: skip
FAILURE_PATHS = ("health_check_failed", "anomaly_detected", "rolled_back", "rollback_failed", "blocked_pending_human")
PATH_NOTES = {
    "health_check_failed": "path A: the candidate never served; no retry",
    "anomaly_detected": "path B: a signal went wrong after cutover",
    "rolled_back": "previous instance live again, commit reverted, core_engine bug filed",
    "rollback_failed": "the automatic recovery itself failed",
    "blocked_pending_human": "a person must repair the previous instance (not review code)",
}


def deployments_view(ledger: Ledger, state_dir: Path, deployment_id: str | None = None) -> dict:
    book = DeploymentBook(ledger)
    deployments = sorted(book.all().values(), key=lambda d: d.started_at, reverse=True)
    chosen = book.get(deployment_id) if deployment_id else (deployments[0] if deployments else None)
    out: dict = {
        "deployments": [{"deployment_id": d.deployment_id, "commit": d.commit, "status": d.status,
                         "started_at": d.started_at.isoformat(), "updated_at": d.updated_at.isoformat()}
                        for d in deployments],  # fmt: skip
        "machine": {"happy": list(HAPPY_PATH), "failure": list(FAILURE_PATHS), "notes": PATH_NOTES,
                    "transitions": {k: sorted(v) for k, v in lifecycle.DEPLOYMENT.items() if k != "_initial"}},  # fmt: skip
        "live": _live(state_dir),
        "needs_person": [d.person_summary() for d in book.needing_person()],
        "deployment": None,
    }
    assert set(HAPPY_PATH) | set(FAILURE_PATHS) == set(get_args(DeploymentStatus))
    if chosen is not None:
        signals = book.signals(chosen.deployment_id)
        latest: dict[tuple[str, str], dict] = {}
        counts: dict[tuple[str, str], int] = {}
        for s in signals:
            key = (s.phase, s.signal)
            latest[key] = s.model_dump(mode="json")
            counts[key] = counts.get(key, 0) + 1
        out["deployment"] = {
            **chosen.model_dump(mode="json"),
            "visited": [e.status for e in chosen.timeline],
            "what_to_do": chosen.what_to_do(),
            "signals_lacking_data": lacking_data(signals),
            "signals": [{**v, "readings": counts[k], "anomalies": sum(1 for s in signals
                         if (s.phase, s.signal) == k and not s.ok)} for k, v in latest.items()],  # fmt: skip
        }
    return out


def _live(state_dir: Path) -> dict | None:
    path = state_dir / "deploy" / "supervisor.json"
    if not path.exists():
        return None
    from .supervisor import SupervisorState

    state = SupervisorState.model_validate_json(path.read_text())
    if state.live is None:
        return None
    return {"commit": state.live.commit, "port": state.live.port, "pid": state.live.pid,
            "public_port": state.proxy.public_port if state.proxy else None}  # fmt: skip
