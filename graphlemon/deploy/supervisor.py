"""The deploy supervisor's commands (REQ-15): c_deploy_supervisor_stage / health_check / cutover / monitor /
rollback, over one project's ledger (GraphLemon's own repository) and one deploy folder.

The deploy folder (default `<repo>/.graphlemon/deploy/`) holds `instances/<commit>/`, the proxy's config and
socket, and `supervisor.json`: which instance is live, which one is kept as the standby (the previous live one,
until the monitoring window is clean), and the proxy's PID. Every command holds `supervisor.lock` while it runs,
so two supervisors never switch the proxy at once. The ledger and Prefect's database are never in an instance.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ..bugs import BugTracker
from ..errors import ErrorCode, GraphLemonError
from ..models import DeployHealthSignal, NodeEvent, RunRecord
from ..project import ProjectHandle, update_settings
from . import haproxy, health_signals, instances
from .canary import CODE_PATHS as CANARY_CODE_PATHS
from .canary import CanaryEngine, CanaryExpectation, run_canary
from .deployments import ROLLBACK_FAILED_MESSAGE, Deployment, DeploymentBook, short
from .haproxy import ProxyState, pid_alive
from .health_signals import Thresholds
from .instances import Instance

PATH_B_FROM = frozenset({"anomaly_detected", "blocked_pending_human"})
# a deployment left before its cutover (its supervisor stopped): a person's rollback fails its health check (path A)
MANUAL_ABORT_FROM = frozenset({"staged", "candidate_starting", "health_check_running"})
MANUAL_ROLLBACK_FROM = frozenset({"cutover_in_progress", "live", "monitoring", "monitoring_window_clean", "finalized"})


class DeployConfig(BaseModel):
    public_port: int = Field(default=8780, gt=0, lt=65536)
    monitor_window_s: float = Field(default=300, gt=0)
    monitor_interval_s: float = Field(default=5, gt=0)
    start_timeout_s: float = Field(default=60, gt=0)
    canary_timeout_s: float = Field(default=600, gt=0)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    worker: bool = False  # instances also run a Prefect worker for the devloop deployment (needs a server)
    env: dict[str, str] = Field(default_factory=dict)  # for instances and the canary (PREFECT_API_URL, ...)
    canary_expect: CanaryExpectation = Field(default_factory=CanaryExpectation)
    canary_engine: CanaryEngine = "prefect"
    # a passing canary result is reused for a commit whose code (CANARY_CODE_PATHS) is the same tree
    reuse_canary: bool = True


class SupervisorState(BaseModel):
    config: DeployConfig | None = None  # the bootstrap's settings: a deploy started by the DevLoop uses them
    proxy: ProxyState | None = None
    live: Instance | None = None
    standby: Instance | None = None  # the previous live instance, kept running until the window is clean


class Supervisor:
    def __init__(self, project: ProjectHandle, config: DeployConfig | None = None, root: Path | None = None) -> None:
        self.project = project
        self.repo = project.root
        self.config = config or DeployConfig()
        self.root = Path(root) if root is not None else project.state_dir / "deploy"
        self.book = DeploymentBook(project.ledger)

    # -- state ---------------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.root / "supervisor.json"

    def state(self) -> SupervisorState:
        if not self.state_file.exists():
            return SupervisorState()
        return SupervisorState.model_validate_json(self.state_file.read_text())

    def _save(self, state: SupervisorState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(state.model_dump_json(indent=2))
        os.replace(tmp, self.state_file)

    @contextmanager
    def _locked(self) -> Iterator[SupervisorState]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "supervisor.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield self.state()

    # -- bootstrap / shutdown --------------------------------------------------------------------------
    def bootstrap(self, ref: str) -> SupervisorState:
        """Start the first live instance of `ref` and the proxy in front of it (no deployment record: nothing is
        replaced). The project becomes self-hosted: GraphLemon's own repository, served from it, so a core_engine
        bug goes to the Coder and a task the DevLoop merges is deployed with these settings (REQ-15)."""
        commit = instances.resolve_commit(self.repo, ref)
        with self._locked() as state:
            if state.proxy is not None and haproxy.alive(state.proxy):
                raise GraphLemonError(ErrorCode.INVALID_PARAM, f"the proxy already runs (PID {state.proxy.pid})")
            inst = self._start_instance(commit)
            reading = instances.wait_healthy(inst, self.config.start_timeout_s)
            if reading.status != 200 or reading.commit != commit:
                instances.stop(inst)
                raise GraphLemonError(ErrorCode.IO_ERROR, f"instance {short(commit)} is not healthy: {reading}")
            try:
                proxy = haproxy.start(self.root / "proxy", self.config.public_port, inst.port)
            except GraphLemonError:
                instances.stop(inst)
                raise
            state = SupervisorState(config=self.config, proxy=proxy, live=inst)
            self._save(state)
        update_settings(self.project, self_hosted=True, deploy_root=str(self.root))
        return state

    def shutdown(self) -> None:
        """Stop the proxy and every instance this supervisor started (by PID)."""
        with self._locked() as state:
            for inst in (state.live, state.standby):
                if inst is not None:
                    instances.stop(inst)
            if state.proxy is not None:
                haproxy.stop(state.proxy)
            self._save(SupervisorState())

    # -- c_deploy_supervisor_stage -------------------------------------------------------------------
    def check_stage(self, ref: str) -> str:
        """The commit `stage` would deploy, or why it is refused — read from the ledger and the state file only, so a
        caller refuses before it starts anything (a flow, a Prefect server)."""
        commit = instances.resolve_commit(self.repo, ref)
        live = self.state().live
        if live is None:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, "no live instance: run `graphlemon deploy bootstrap` first")
        if live.commit == commit:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{short(commit)} is already live")
        running = self.book.active()
        if running is not None:
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"deployment {running.deployment_id} ({short(running.commit)}) is still {running.status}; one "
                "deployment at a time" + (f". {running.what_to_do()}" if running.what_to_do() else ""),
                deployment_id=running.deployment_id,
            )
        return commit

    def stage(self, ref: str, *, by: str = "supervisor", task_id: str | None = None) -> Deployment:
        """Check out `ref` as a candidate instance; `task_id`: the DevLoop task whose merge this is."""
        commit = instances.resolve_commit(self.repo, ref)
        if self.state().live is None:  # refused before anything is written
            raise GraphLemonError(ErrorCode.INVALID_PARAM, "no live instance: run `graphlemon deploy bootstrap` first")
        with self._locked() as state:
            if state.live is None or state.proxy is None:
                raise GraphLemonError(ErrorCode.INVALID_PARAM, "no live instance: run `graphlemon deploy bootstrap` first")
            if state.live.commit == commit:
                raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{short(commit)} is already live")
            started = time.monotonic()
            instance_dir = instances.checkout(self.repo, self.root / "instances", commit)
            return self.book.stage(
                by=by, commit=commit, instance_dir=str(instance_dir), previous_commit=state.live.commit,
                previous_instance_dir=state.live.dir, previous_port=state.live.port, previous_pid=state.live.pid,
                duration_ms=_ms(started), note=f"instance {instance_dir} checked out", task_id=task_id,
            )  # fmt: skip

    # -- c_deploy_supervisor_health_check --------------------------------------------------------------
    def health_check(self, deployment_id: str) -> Deployment:
        """Start the candidate on a free port, then its health endpoint and the canary task. No retry."""
        dep = self.book.get(deployment_id)
        started = time.monotonic()
        with self._locked():
            try:
                inst = self._start_instance(dep.commit, Path(dep.instance_dir))
            except GraphLemonError as exc:  # e.g. the checkout is not a GraphLemon: failed, never stuck in staged
                return self.book.move(deployment_id, "health_check_failed", note=f"could not start: {exc.message}",
                                      duration_ms=_ms(started))  # fmt: skip
            dep = self.book.move(deployment_id, "candidate_starting", port=inst.port, pid=inst.pid,
                                 note=f"graphlemon serve on 127.0.0.1:{inst.port}")  # fmt: skip
            reading = instances.wait_healthy(inst, self.config.start_timeout_s)
            endpoint = health_signals.health_endpoint(deployment_id, "health_check", reading, dep.commit)
            self.book.record(endpoint)
            if not endpoint.ok:
                return self.book.move(deployment_id, "health_check_failed", note=f"health endpoint: {endpoint.detail}",
                                      duration_ms=_ms(started))  # fmt: skip
            self.book.move(deployment_id, "health_check_running", note="health endpoint ok; canary task running",
                           duration_ms=_ms(started))  # fmt: skip
        canary_started = time.monotonic()
        signal = self._canary(dep)
        self.book.record(signal)
        to = "health_check_passed" if signal.ok else "health_check_failed"
        return self.book.move(deployment_id, to, note=f"canary task: {signal.detail}", duration_ms=_ms(canary_started))

    def _canary(self, dep: Deployment) -> DeployHealthSignal:
        tree = instances.code_tree(self.repo, dep.commit, CANARY_CODE_PATHS)
        if self.config.reuse_canary:
            for old in self.project.ledger.read_as("deploy_health_signal", DeployHealthSignal):
                if old.signal == "canary_task" and old.ok and old.code_tree == tree and old.reused_from is None:
                    return DeployHealthSignal(
                        deployment_id=dep.deployment_id, phase="health_check", signal="canary_task", ok=True,
                        value=0, code_tree=tree, reused_from=old.deployment_id,
                        detail=f"same code tree {tree[:12]} passed in {old.deployment_id}: {old.detail}",
                    )  # fmt: skip
        try:
            result = run_canary(Path(dep.instance_dir), env=self.config.env, timeout=self.config.canary_timeout_s,
                                expect=self.config.canary_expect, engine=self.config.canary_engine)  # fmt: skip
        except (OSError, subprocess.SubprocessError, GraphLemonError) as exc:  # e.g. no examples/snake in the commit
            return DeployHealthSignal(deployment_id=dep.deployment_id, phase="health_check", signal="canary_task",
                                      ok=False, detail=f"the canary could not run: {exc}", code_tree=tree)  # fmt: skip
        return DeployHealthSignal(deployment_id=dep.deployment_id, phase="health_check", signal="canary_task",
                                  ok=result.ok, value=result.duration_ms / 1000, detail=result.detail,
                                  code_tree=tree)  # fmt: skip

    # -- c_deploy_supervisor_cutover -----------------------------------------------------------------
    def cutover(self, deployment_id: str) -> Deployment:
        dep = self.book.get(deployment_id)
        with self._locked() as state:
            started = time.monotonic()
            self.book.move(deployment_id, "cutover_in_progress")
            candidate = Instance(commit=dep.commit, dir=dep.instance_dir, port=dep.port, pid=dep.pid,
                                 log=str(Path(dep.instance_dir).parent / f"{Path(dep.instance_dir).name}.{dep.port}.log"))  # fmt: skip
            haproxy.switch_to(state.proxy, candidate.port)
            state.standby, state.live = state.live, candidate
            self._save(state)
            through = instances.read_health(state.proxy.public_port)
            if through.commit != dep.commit:
                return self.book.move(deployment_id, "anomaly_detected",
                                      note=f"the proxy does not serve the candidate after the switch: {through}")  # fmt: skip
            return self.book.move(deployment_id, "live", duration_ms=_ms(started),
                                  note=f"proxy 127.0.0.1:{state.proxy.public_port} -> 127.0.0.1:{candidate.port}")  # fmt: skip

    # -- c_deploy_supervisor_monitor -----------------------------------------------------------------
    def monitor(self, deployment_id: str) -> Deployment:
        """Watch the four signals for the window; the first anomaly ends it (anomaly_detected), a clean window
        finalizes (the previous instance is stopped)."""
        dep = self.book.move(deployment_id, "monitoring",
                             note=f"window {self.config.monitor_window_s:g} s, every {self.config.monitor_interval_s:g} s")  # fmt: skip
        since = dep.timeline[-1].ts
        started = time.monotonic()
        while True:
            signals = self.sample(dep, since)
            self.book.record(*signals)
            bad = health_signals.anomalies(signals)
            if bad:
                why = "; ".join(f"{s.signal}: {s.detail}" for s in bad)
                return self.book.move(deployment_id, "anomaly_detected", note=why, duration_ms=_ms(started))
            if time.monotonic() - started >= self.config.monitor_window_s:
                break
            time.sleep(min(self.config.monitor_interval_s,
                           max(0.0, self.config.monitor_window_s - (time.monotonic() - started))))  # fmt: skip
        self.book.move(deployment_id, "monitoring_window_clean", duration_ms=_ms(started))
        return self.finalize(deployment_id)

    def sample(self, dep: Deployment, since: datetime) -> list[DeployHealthSignal]:
        reading = instances.read_health(dep.port)
        ledger = self.project.ledger
        return [
            health_signals.health_endpoint(dep.deployment_id, "monitoring", reading, dep.commit),
            health_signals.process_restarts(dep.deployment_id, "monitoring", dep.pid, pid_alive(dep.pid), reading.pid),
            health_signals.task_error_rate(dep.deployment_id, ledger.read_as("node", NodeEvent), since,
                                           self.config.thresholds),
            health_signals.validator_approval_rate(dep.deployment_id, ledger.read_as("run", RunRecord), since,
                                                   self.config.thresholds),
        ]  # fmt: skip

    def finalize(self, deployment_id: str) -> Deployment:
        with self._locked() as state:
            if state.standby is not None:
                instances.stop(state.standby)
                state.standby = None
                self._save(state)
            return self.book.move(deployment_id, "finalized", note="previous instance stopped")

    # -- c_deploy_supervisor_rollback ----------------------------------------------------------------
    def rollback(self, deployment_id: str | None = None, *, by: str = "supervisor") -> Deployment:
        """Roll back `deployment_id`; without one, the deployment that needs a person (a failed rollback), else the
        latest. Two that need a person: INVALID_PARAM, naming them."""
        dep = self.book.get(deployment_id) if deployment_id else self._default_rollback()
        if dep is None:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, "no deployment to roll back")
        if dep.status in MANUAL_ABORT_FROM:
            dep = self.book.move(dep.deployment_id, "health_check_failed", by=by,
                                 note=f"stopped before cutover: rollback requested by {by}")  # fmt: skip
        if dep.status in MANUAL_ROLLBACK_FROM:
            dep = self.book.move(dep.deployment_id, "anomaly_detected", by=by, note=f"rollback requested by {by}")
        if dep.status == "health_check_failed":
            return self._rollback_path_a(dep, by)
        if dep.status in PATH_B_FROM:
            return self._rollback_path_b(dep, by)
        raise GraphLemonError(ErrorCode.INVALID_TRANSITION,
                              f"deployment {dep.deployment_id} is {dep.status}: nothing to roll back")  # fmt: skip

    def _default_rollback(self) -> Deployment | None:
        blocked = self.book.needing_person()
        if len(blocked) > 1:
            raise GraphLemonError(
                ErrorCode.INVALID_PARAM,
                "several deployments need a person: " + ", ".join(d.deployment_id for d in blocked)
                + "; name one: `graphlemon deploy rollback DEPLOYMENT_ID`",
            )  # fmt: skip
        return blocked[0] if blocked else self.book.latest()

    def _rollback_path_a(self, dep: Deployment, by: str) -> Deployment:
        """The health check failed: the live instance was never touched. Stop the candidate, revert, file a bug."""
        started = time.monotonic()
        with self._locked():
            if dep.pid is not None:
                haproxy.stop_group(dep.pid)
            evidence = self._failed_checks(dep, "health_check")
            return self._revert_and_file(dep, by, f"health check failed: {evidence}", started)

    def _rollback_path_b(self, dep: Deployment, by: str) -> Deployment:
        """After cutover: put the previous instance back behind the proxy (still running, or restarted from
        previous_instance_dir), stop the candidate, revert, file a bug. If the previous instance cannot serve,
        the candidate keeps serving and a person is asked to repair the previous instance."""
        started = time.monotonic()
        with self._locked() as state:
            target, why_not = self._previous_serving(dep, state)
            if target is None:
                failed = self.book.move(dep.deployment_id, "rollback_failed", by=by, blocked_reason="rollback_failed",
                                        note=f"{ROLLBACK_FAILED_MESSAGE} {why_not}", duration_ms=_ms(started))  # fmt: skip
                return self.book.move(dep.deployment_id, "blocked_pending_human", by=by,
                                      blocked_reason="rollback_failed", note=failed.what_to_do())  # fmt: skip
            haproxy.switch_to(state.proxy, target.port)
            if dep.pid is not None and dep.pid != target.pid:
                haproxy.stop_group(dep.pid)
            state.live, state.standby = target, None
            self._save(state)
            anomaly = next((e.note for e in reversed(dep.timeline) if e.status == "anomaly_detected"), "") or ""
            evidence = "; ".join(x for x in (anomaly, self._failed_checks(dep, "monitoring")) if x)
            return self._revert_and_file(dep, by, f"anomaly after cutover: {evidence}", started,
                                         previous_port=target.port, previous_pid=target.pid)  # fmt: skip

    def _previous_serving(self, dep: Deployment, state: SupervisorState) -> tuple[Instance | None, str]:
        standby = state.standby if state.standby and state.standby.commit == dep.previous_commit else None
        if standby is not None and pid_alive(standby.pid):
            reading = instances.read_health(standby.port)
            if reading.status == 200 and reading.commit == dep.previous_commit:
                return standby, ""
            instances.stop(standby)
        if not dep.previous_instance_dir or not dep.previous_commit:
            return None, "No previous instance is recorded."
        previous_dir = Path(dep.previous_instance_dir)
        try:
            if not previous_dir.exists():  # removed (by a person repairing it): checked out anew from its commit
                previous_dir = instances.checkout(self.repo, previous_dir.parent, dep.previous_commit)
            inst = self._start_instance(dep.previous_commit, previous_dir)
        except GraphLemonError as exc:
            return None, f"Restarting it from {dep.previous_instance_dir} failed: {exc.message}"
        reading = instances.wait_healthy(inst, self.config.start_timeout_s)
        if reading.status == 200 and reading.commit == dep.previous_commit:
            return inst, ""
        instances.stop(inst)
        return None, f"Restarting it from {dep.previous_instance_dir} failed: {reading.error or reading}"

    def _revert_and_file(self, dep: Deployment, by: str, evidence: str, started: float, **fields) -> Deployment:
        try:
            revert = self._revert(dep.commit)
        except GraphLemonError as exc:
            note = f"git revert of {short(dep.commit)} failed: {exc.message}"
            self.book.move(dep.deployment_id, "rollback_failed", by=by, blocked_reason="rollback_failed", note=note)
            return self.book.move(dep.deployment_id, "blocked_pending_human", by=by, blocked_reason="rollback_failed",
                                  note=f"{note} The live instance is unchanged; revert the commit by hand.")  # fmt: skip
        bugs = BugTracker(self.project.ledger)
        bug_id, _ = bugs.open(title=f"deploy of {short(dep.commit)} rolled back: {evidence}"[:190],
                              source="deploy_supervisor", detail=evidence, severity="high",
                              signature=f"deploy:{dep.commit}", by="deploy-supervisor")  # fmt: skip
        bugs.update(bug_id, by="deploy-supervisor", root_cause_category="core_engine",
                    root_cause_detail=f"GraphLemon commit {dep.commit} (deployment {dep.deployment_id}): {evidence}")  # fmt: skip
        return self.book.move(dep.deployment_id, "rolled_back", by=by, revert_commit=revert, bug_id=bug_id,
                              duration_ms=_ms(started), note=f"reverted by {short(revert)}; bug {bug_id}", **fields)  # fmt: skip

    def _revert(self, commit: str) -> str:
        parents = instances.git(self.repo, "rev-list", "--parents", "-n", "1", commit).stdout.split()[1:]
        mainline = ["-m", "1"] if len(parents) > 1 else []
        instances.git(self.repo, "revert", "--no-edit", *mainline, commit)
        return instances.git(self.repo, "rev-parse", "HEAD").stdout.strip()

    def _failed_checks(self, dep: Deployment, phase: str) -> str:
        failed = [s for s in self.book.signals(dep.deployment_id) if s.phase == phase and not s.ok]
        return "; ".join(f"{s.signal}: {s.detail}" for s in failed[-4:])

    # -- the whole blue-green run (p_deploy_supervisor_blue_green) --------------------------------------
    def deploy(self, ref: str, *, task_id: str | None = None) -> Deployment:
        dep = self.stage(ref, task_id=task_id)
        dep = self.health_check(dep.deployment_id)
        if dep.status != "health_check_passed":
            return self.rollback(dep.deployment_id)
        dep = self.cutover(dep.deployment_id)
        if dep.status == "live":
            dep = self.monitor(dep.deployment_id)
        if dep.status == "anomaly_detected":
            return self.rollback(dep.deployment_id)
        return dep

    # -- helpers -------------------------------------------------------------------------------------
    def _start_instance(self, commit: str, instance_dir: Path | None = None) -> Instance:
        instance_dir = instance_dir or instances.checkout(self.repo, self.root / "instances", commit)
        return instances.start(instance_dir, commit, _free_port(), self.repo, worker=self.config.worker,
                               env=self.config.env)  # fmt: skip


def status_report(sup: Supervisor, deployment_id: str | None = None) -> dict:
    """What `deploy status` and the console show: one deployment (default the latest), its signals, the live
    instance, and every deployment that needs a person, whichever is latest."""
    dep = sup.book.get(deployment_id) if deployment_id else sup.book.latest()
    state = sup.state()
    out: dict = {"state": state.model_dump(mode="json", exclude={"config"}), "deployment": None, "signals": [], "what_to_do": None,
                 "proxy_alive": bool(state.proxy and haproxy.alive(state.proxy)),
                 "needs_person": [d.person_summary() for d in sup.book.needing_person()],
                 "signals_lacking_data": []}  # fmt: skip
    if dep is not None:
        out["deployment"] = dep.model_dump(mode="json")
        signals = sup.book.signals(dep.deployment_id)
        out["signals"] = [s.model_dump(mode="json") for s in signals]
        out["signals_lacking_data"] = health_signals.lacking_data(signals)
        out["what_to_do"] = dep.what_to_do()
    return out


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

