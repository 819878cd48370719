"""Ledger records: one pydantic model per record kind, one line of ndjson each.

Every record has `kind` (which also picks its ledger file), `ts` (UTC),
`schema_version` and ids. Statuses are `Literal`s, the same names in the ledger, result.json,
triage.json, the CLI and the console (docs/ledger.md).
A change of state is a new record; current state is a fold (see `lifecycle`,
`bugs`, `tasks`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from .sandbox_settings import SandboxSettings
from .test_counts import TestSummary

SCHEMA_VERSION = 1

# --- status vocabularies --------------------------------------------------------------------

TaskStatus = Literal[
    "created",
    "queued",
    "planning",
    "coding",
    "integrating",
    "validating",
    "waiting_for_quota",
    "paused",
    "blocked_pending_human",
    "done",
    "abandoned",
]
BlockedReason = Literal[
    "budget_exceeded",
    "usage_limit_wait_timeout",
    "classifier_blocked",
    "not_converging",
    "retry_limit_exceeded",
    "spec_ambiguous",
    "low_confidence_triage",
    "validator_inconclusive",
    "skill_defect",
    "plan_inconsistent",
    "state_corrupt",
    "rollback_failed",
    "human_requested",
    "stage_failed",
    "stopped_by_person",  # a person stopped the run (graphlemon stop, the console's Stop, Cancel in Prefect)
]
# a stage is named after the role that runs it: the one name of both (an agent turn's `role` is its stage)
Stage = Literal["planner", "coder", "tester", "integrator", "bug-triager", "validator", "skill-editor"]
# stage (and role) names an earlier version wrote -> today's: every record field holding one reads an old ledger's
# name as today's (each rename also adds a fixture ledger under tests/fixtures/ledgers/: docs/ledger.md)
OLD_STAGE_NAMES = {"triager": "bug-triager"}  # the bug-triager stage was "triager" until 2026-12-03
# a skill iteration (REQ-08): proposed -> gating -> applied | rejected; applied -> rolled_back
SkillIterationStatus = Literal["proposed", "gating", "applied", "rejected", "rolled_back"]
NodeStatus = Literal[
    "pending",
    "running",
    "verifying",
    "reflecting",
    "retrying",
    "waiting_for_quota",
    "done",
    "failed",
    "blocked",
    "cancelled",
]
QuotaLimitType = Literal["session", "weekly", "opus"]
BugStatus = Literal["open", "fixing", "fixed", "verified", "reopened", "wontfix"]
BugSource = Literal["unit_test", "unit_test_infra", "integration", "validator", "human_reported", "deploy_supervisor"]
BugCategory = Literal["unknown", "contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake"]
TriageCategory = Literal["contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake"]
RootCauseCategory = Literal["coder", "planning", "skill_defect", "inconclusive_escalate", "core_engine"]
SuggestedRoute = Literal["fast_lane", "full_replan", "skill_update", "escalate"]
Severity = Literal["low", "medium", "high", "critical"]
RunScope = Literal["unit", "integration", "validation"]
NextAction = Literal["pass", "retry_coder", "retry_tester"]
ArtifactType = Literal["brd", "prd", "sdd", "benchmark", "code_diff", "test_report"]
ExecutorName = Literal["scripted", "anthropic", "claude_code", "none"]
BudgetLimitType = Literal["token_count", "cost_usd"]
# a deployment of GraphLemon itself (REQ-15, blue-green): its states, happy path then the failure paths (docs/deploy.md)
DeploymentStatus = Literal[
    "staged",
    "candidate_starting",
    "health_check_running",
    "health_check_passed",
    "cutover_in_progress",
    "live",
    "monitoring",
    "monitoring_window_clean",
    "finalized",
    "health_check_failed",
    "anomaly_detected",
    "rolled_back",
    "rollback_failed",
    "blocked_pending_human",
]
DeploySignalName = Literal[
    "health_endpoint", "canary_task", "process_restarts", "task_error_rate", "validator_approval_rate"
]
DeployPhase = Literal["health_check", "monitoring", "rollback"]
# execution_log_file.status (REQ-13): open while its node runs, closed when it ends, then purged by retention
LogStatus = Literal["open", "closed", "purged", "purge_failed"]
MAX_RETENTION_DAYS = 3650  # ten years: a larger setting is a typo, not a policy


def utcnow() -> datetime:
    return datetime.now(UTC)


def current_stage(value: object) -> object:
    """A stage or role field's value under today's name (a `field_validator` of every such field)."""
    return OLD_STAGE_NAMES.get(value, value) if isinstance(value, str) else value


# kind -> its model, in the order the kinds are declared (each record kind registers itself: `Record`)
RECORD_TYPES: dict[str, type[Record]] = {}


class Record(BaseModel):
    """Base of every ledger line. A record kind is a subclass naming its `kind` and its `ledger_file`; the tables
    of kinds (`RECORD_TYPES`, `LEDGER_FILES`, the `LedgerRecord` union) are derived from these declarations."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)
    ledger_file: ClassVar[str]  # the file under .graphlemon/ that holds this kind

    kind: str
    schema_version: int = SCHEMA_VERSION
    ts: datetime = Field(default_factory=utcnow)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        kind = cls.model_fields["kind"].default
        if "ledger_file" not in cls.__dict__ or not isinstance(kind, str):
            raise TypeError(f"the record kind {cls.__name__} must declare its kind and its ledger_file")
        if kind in RECORD_TYPES:
            raise TypeError(f"the record kind {kind!r} is declared twice ({RECORD_TYPES[kind].__name__}, {cls.__name__})")
        RECORD_TYPES[kind] = cls


# --- the record kinds ---------------------------------------------------------------------


class TaskEvent(Record):
    """A task (one goal) changed status. REQ-01 / 05 / 09 / 10 / 14."""

    ledger_file = "tasks.ndjson"
    kind: Literal["task"] = "task"
    task_id: str
    status: TaskStatus
    goal_text: str | None = None
    blocked_reason: BlockedReason | None = None
    loop_round: int | None = None
    by: str = "system"
    note: str | None = None
    flow_run_id: str | None = None


class NodeFields(BaseModel):
    """What a work-node execution is and where it stands: the fields of a node event and of the folded node state."""

    node_exec_id: str
    task_id: str | None = None
    stage: Stage
    unit_id: str | None = None
    attempt: int = 1
    loop_round: int = 0
    status: NodeStatus
    error_code: str | None = None
    error: str | None = None
    quota_wait_started_at: datetime | None = None
    quota_limit_type: QuotaLimitType | None = None
    git_worktree_ref: str | None = None
    output_ref: str | None = None

    _current_stage = field_validator("stage", mode="before")(current_stage)


class NodeEvent(Record, NodeFields):
    """A work-node execution changed status (or recorded a sandbox violation)."""

    ledger_file = "nodes.ndjson"
    kind: Literal["node"] = "node"
    event: Literal["transition", "violation"] = "transition"
    duration_ms: int | None = None


class RunFailure(BaseModel):
    """One failing test as recorded in the ledger and in result.json plus location: the one failure
    record of the tester, validation and integration runs (the test runner's `TestFailure` becomes one through
    `from_test`; an integration step's richer `IntegrationFailure` is kept beside it in the run directory)."""

    model_config = ConfigDict(extra="forbid")

    test: str
    file: str | None = None
    line: int | None = None
    message: str = ""
    expected: Any = None
    got: Any = None
    stack: str = ""
    hint: str = ""
    bug_id: str | None = None

    @classmethod
    def from_test(cls, f: Any, **overrides: Any) -> RunFailure:
        """From the test runner's `TestFailure` (its `name` is our `test`, its `detail` our `stack`)."""
        fields = dict(test=f.name, file=f.file, line=f.line, message=f.message, expected=f.expected, got=f.got,
                      stack=f.detail, hint=f.hint)  # fmt: skip
        return cls(**{**fields, **overrides})


class RunRecord(Record):
    """A test / integration / validation run result."""

    ledger_file = "runs.ndjson"
    kind: Literal["run"] = "run"
    run_id: str
    scope: RunScope
    task_id: str | None = None
    unit_id: str | None = None
    node_exec_id: str | None = None
    attempt: int = 1
    loop_round: int = 0
    code_ref: str | None = None  # git tree/commit of the code under test (flaky-test detection)
    ok: bool
    crashed: bool = False
    timed_out: bool = False
    framework: str | None = None
    summary: TestSummary = Field(default_factory=TestSummary)
    failures: list[RunFailure] = Field(default_factory=list)
    acceptance_coverage: float | None = None
    contract_coverage: float | None = None
    next_action: NextAction | None = None
    duration_ms: int = 0
    result_ref: str | None = None
    confinement: Literal["bwrap", "none"] | None = None  # how the tests ran (None: not recorded)


class BugEvent(Record):
    """A bug was opened, changed status, or had fields updated (triage / validator)."""

    ledger_file = "bugs.ndjson"
    kind: Literal["bug"] = "bug"
    bug_id: str
    event: Literal["open", "transition", "update"]
    status: BugStatus
    from_status: BugStatus | None = None
    by: str = "system"
    fix_refs: list[str] = Field(default_factory=list)
    note: str | None = None
    # fields set on open, refined by update events (None = unchanged)
    source: BugSource | None = None
    task_id: str | None = None
    unit_id: str | None = None
    run_id: str | None = None
    test_name: str | None = None
    category: BugCategory | None = None
    severity: Severity | None = None
    title: str | None = None
    detail: str | None = None
    affected_units: list[str] | None = None
    signature: str | None = None
    root_cause_category: RootCauseCategory | None = None
    root_cause_detail: str | None = None
    suggested_route: SuggestedRoute | None = None
    skill_role: Stage | None = None  # a skill_defect: whose skill (REQ-08)

    _current_stage = field_validator("skill_role", mode="before")(current_stage)


class UsageRecord(Record):
    """One LLM call."""

    ledger_file = "usage.ndjson"
    kind: Literal["usage"] = "usage"
    call_id: str
    task_id: str | None = None
    node_exec_id: str | None = None
    stage: Stage | None = None
    unit_id: str | None = None
    role: str
    model: str
    executor: ExecutorName
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: int = 0
    stop_reason: str | None = None
    skill_commit: str | None = None  # the skills-repo commit the role's skill was rendered from (REQ-08)

    _current_stage = field_validator("stage", mode="before")(current_stage)


class SddPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target_section: str
    op: str
    text: str


class TriageRecord(Record):
    """A triage verdict: the triage.json fields and the triager's output (docs/triage.md)."""

    ledger_file = "triage.ndjson"
    kind: Literal["triage"] = "triage"
    run_id: str
    task_id: str | None = None
    root_cause: str
    category: TriageCategory
    affected_units: list[str] = Field(default_factory=list)
    proposed_sdd_patch: SddPatch | None = None
    confidence: float = Field(ge=0, le=1)
    evidence: list[str] = Field(default_factory=list)
    will_auto_apply: bool = False
    evidence_verified: bool = False
    failure_signature: str | None = None
    fallback: bool = False
    fallback_reason: str | None = None  # why the fallback verdict (spec_ambiguous, low confidence) replaced the proposed one
    executor: ExecutorName = "none"
    triage_ref: str | None = None
    l3_question: str | None = None
    duration_ms: int = 0  # TriagerOutput.duration_ms
    tokens_used: int = 0  # TriagerOutput.tokens_used (0 for the deterministic triager)
    method: Literal["agent", "rules"] = "rules"  # the bug-triager agent (rules as its tools), or the rules alone
    behaviour: str | None = None  # digest of what the failing step got: did a retry change the failing behaviour?
    patch_review: str | None = None  # why a contract patch waits for a person (another SDD statement, one side only)
    retriage: str | None = None  # "without_environment" / "escalate" when an earlier triage of the failure exists


class ArtifactRecord(Record):
    """A versioned planning / coding artifact with its lineage (REQ-02)."""

    ledger_file = "artifacts.ndjson"
    kind: Literal["artifact"] = "artifact"
    artifact_id: str
    artifact_type: ArtifactType
    version: int = 1
    path: str
    sha256: str
    task_id: str | None = None
    unit_id: str | None = None
    depends_on_artifact_ids: list[str] = Field(default_factory=list)
    title: str | None = None


class TimelineEvent(Record):
    """A human-readable milestone (unit_tested, test_failed, test_passed, routed, escalated, ...)."""

    ledger_file = "timeline.ndjson"
    kind: Literal["timeline"] = "timeline"
    event: str
    task_id: str | None = None
    unit_id: str | None = None
    ref: str | None = None
    summary: str = ""


class BudgetConfig(Record):
    """A task's budget guardrail setting (REQ-10, c_budget_config_update)."""

    ledger_file = "budget.ndjson"
    kind: Literal["budget"] = "budget"
    task_id: str
    limit_type: BudgetLimitType
    limit_value: float = Field(gt=0)
    by: str = "system"


class TaskSettingsRecord(Record):
    """A task's loop settings (its limits and the executor that runs its agents), appended when they change: the
    latest one is what a resume runs with."""

    ledger_file = "task_settings.ndjson"
    kind: Literal["task_settings"] = "task_settings"
    task_id: str
    settings: Any  # the LoopConfig's JSON object (a DuckDB JSON column)
    by: str = "system"


class EscalationRecord(Record):
    """The evidence pack that comes with every blocked_pending_human."""

    ledger_file = "escalations.ndjson"
    kind: Literal["escalation"] = "escalation"
    task_id: str
    blocked_reason: BlockedReason
    summary_md: str
    open_bug_ids: list[str] = Field(default_factory=list)


class OutcomeRecord(Record):
    """A finished step of a node execution: the stage's return value, appended once (resume reads it back).

    `name` says which step: `outcome` for the node's result, `a<N>-coder` / `a<N>-tester` /
    `a<N>-coder-answer` for the turns inside an L1 node, `integrator-answer` for the integrator's turn."""

    ledger_file = "outcomes.ndjson"
    kind: Literal["outcome"] = "outcome"
    node_exec_id: str
    name: str = "outcome"
    task_id: str | None = None
    model: str  # the pydantic model of `value` (read back with the same model)
    value: Any  # the model's JSON (a DuckDB JSON column)


class SkillRecord(Record):
    """A project's skills repository (.graphlemon/skills/, REQ-08): `seeded` once, `pinned` per task.

    A task renders every skill from the commit it pinned when it started (moved on by an applied iteration),
    so an outcome can be traced to the skill text that produced it."""

    ledger_file = "skills.ndjson"
    kind: Literal["skill"] = "skill"
    event: Literal["seeded", "pinned"]
    commit: str
    task_id: str | None = None
    iteration_id: str | None = None  # the applied iteration that moved the pin
    roles: list[str] = Field(default_factory=list)


class SkillGateResult(BaseModel):
    """The regression gate of one skill iteration: the node that showed the bug, replayed with the new skill."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    replayed_node: str | None = None
    bug_test: str | None = None
    bug_test_passed: bool = False
    green_before: list[str] = Field(default_factory=list)  # units green with the old skill
    newly_red: list[str] = Field(default_factory=list)  # of those, red with the new skill
    failed_before: list[str] = Field(default_factory=list)  # test names
    failed_after: list[str] = Field(default_factory=list)
    note: str = ""


class SkillIterationEvent(Record):
    """One change of a role's skill (REQ-08): a commit in the skills repository, triggered by a bug."""

    ledger_file = "skill_iterations.ndjson"
    kind: Literal["skill_iteration"] = "skill_iteration"
    iteration_id: str
    status: SkillIterationStatus
    from_status: SkillIterationStatus | None = None
    by: str = "system"
    note: str | None = None
    # set when proposed
    skill: Stage | None = None
    parent_commit: str | None = None
    commit: str | None = None
    triggered_by_bug_id: str | None = None
    task_id: str | None = None
    author: str | None = None  # an agent role, or "human"
    rationale: str | None = None
    diff_stat: str | None = None
    # set later
    gate: SkillGateResult | None = None
    revert_commit: str | None = None  # the commit that undid it (rejected, rolled_back)

    _current_stage = field_validator("skill", mode="before")(current_stage)


LeaseEventKind = Literal[
    "taken", "taken_over", "handed", "adopted", "renewed", "released", "refused", "stop_requested", "slot_taken",
    "slot_released",
]


class LeaseEvent(Record):
    """One event of a task's lease (graphlemon/lease.py): who runs the task, since when, its heartbeat, a person's
    stop request, the goal slot it holds. The current lease of a task is the fold of its events."""

    ledger_file = "leases.ndjson"
    kind: Literal["lease"] = "lease"
    task_id: str
    lease_id: str  # the lease the event is about (`refused`: the lease that refused the starter)
    event: LeaseEventKind
    holder: str | None = None  # what runs the task: "graphlemon resume", "console: run it now", "Prefect flow run …"
    pid: int | None = None
    host: str | None = None
    boot_id: str | None = None  # the holder's machine since its last boot (/proc/sys/kernel/random/boot_id)
    proc_start: int | None = None  # the holder process's start, in clock ticks since boot: a reused pid is not it
    flow_run_id: str | None = None
    launch_id: str | None = None
    action_id: str | None = None  # the console action that took it: a second request with this id is the same one
    reserved_until: datetime | None = None  # handed to a flow run not started yet: held until then
    previous: str | None = None  # taken_over: the lease it replaced
    reason: str | None = None  # taken_over, released, refused: why
    task_status: TaskStatus | None = None  # released: the task's status when its run let go
    waiting_run: str | None = None  # released: a deployed flow run waits for a person's answer in Prefect
    by: str | None = None  # stop_requested: who asked
    note: str | None = None  # stop_requested: why
    then: Literal["block", "abandon"] | None = None  # stop_requested: what the stop leads to


class LaunchEvent(Record):
    """A process the console started (`graphlemon run` for a goal, `graphlemon resume` for a task), and its exit."""

    ledger_file = "launches.ndjson"
    kind: Literal["launch"] = "launch"
    launch_id: str
    event: Literal["started", "ended"]
    launch_kind: Literal["goal", "resume"] | None = None
    task_id: str | None = None  # a goal's task is created by the process itself (its lease names the launch)
    goal: str | None = None
    pid: int | None = None
    log: str | None = None  # its output, relative to the state dir
    action_id: str | None = None
    returncode: int | None = None  # ended


class DeploymentFields(BaseModel):
    """What a deployment learns once and keeps (commit, instance dirs, ports, PIDs, the rollback's revert and bug):
    carried by the event that learnt it, kept by the folded deployment (graphlemon/deploy/deployments.py)."""

    commit: str | None = None  # the candidate: a merged commit of GraphLemon's repository
    instance_dir: str | None = None
    port: int | None = None
    pid: int | None = None
    previous_commit: str | None = None
    previous_instance_dir: str | None = None
    previous_port: int | None = None
    previous_pid: int | None = None
    blocked_reason: BlockedReason | None = None
    revert_commit: str | None = None  # path A / B: the `git revert` of the candidate's merge
    bug_id: str | None = None  # the core_engine bug filed by a rollback
    task_id: str | None = None  # the DevLoop task whose merge this deploys (a self-hosted project, no person)


class DeploymentEvent(Record, DeploymentFields):
    """A deployment of GraphLemon itself changed state (REQ-15); the current deployment is the fold of its events."""

    ledger_file = "deployments.ndjson"
    kind: Literal["deployment"] = "deployment"
    deployment_id: str
    status: DeploymentStatus
    from_status: DeploymentStatus | None = None
    by: str = "supervisor"
    note: str | None = None
    duration_ms: int | None = None  # how long the phase that ends with this event took


class DeployHealthSignal(Record):
    """One reading of one signal of a deployment's instance (REQ-15): health check or monitoring window."""

    ledger_file = "deploy_health_signals.ndjson"
    kind: Literal["deploy_health_signal"] = "deploy_health_signal"
    deployment_id: str
    phase: DeployPhase
    signal: DeploySignalName
    ok: bool
    value: float | None = None  # the measured value (rate, restarts, HTTP status), None when there was nothing to measure
    baseline: float | None = None
    threshold: float | None = None
    detail: str = ""
    code_tree: str | None = None  # canary_task: the code it ran (graphlemon/, flows/, tasks/, examples/snake/)
    reused_from: str | None = None  # canary_task: the deployment whose passing run of the same code tree is reused
    judged: bool = True  # False: too few samples in the window to judge a rate (recorded, and not an anomaly)


class ExecutionLogEvent(Record):
    """execution_log_file (REQ-13): the raw log of one work_node_execution changed state.

    `path` is relative to `.graphlemon/`; `size_bytes` / `line_count` are set when it closes; `error` says why a
    purge failed; `retention_days` is the setting a purge applied."""

    ledger_file = "execution_logs.ndjson"
    kind: Literal["log"] = "log"
    node_exec_id: str
    status: LogStatus
    from_status: LogStatus | None = None
    task_id: str | None = None
    stage: Stage | None = None
    unit_id: str | None = None
    path: str
    size_bytes: int | None = None
    line_count: int | None = None
    error: str | None = None
    retention_days: int | None = None
    by: str = "system"

    _current_stage = field_validator("stage", mode="before")(current_stage)


class LogRetentionConfig(Record):
    """log_retention_config (REQ-13, c_log_retention_config_update): how many days a closed log is kept."""

    ledger_file = "log_retention.ndjson"
    kind: Literal["log_retention"] = "log_retention"
    retention_days: int = Field(ge=1, le=MAX_RETENTION_DAYS)
    by: str = "system"


# kind -> its ledger file under .graphlemon/
LEDGER_FILES: dict[str, str] = {kind: model.ledger_file for kind, model in RECORD_TYPES.items()}
LedgerRecord = Annotated[Union[tuple(RECORD_TYPES.values())], Field(discriminator="kind")]  # noqa: UP007
RECORD_ADAPTER: TypeAdapter[Any] = TypeAdapter(LedgerRecord)


class ProjectSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)

    max_concurrent_goals: int = Field(default=1, ge=1)
    default_branch: str | None = None
    # GraphLemon's own repository, served by the deploy supervisor (set by `graphlemon deploy bootstrap`): a
    # core_engine bug goes to the Coder, and a task merged into the branch is deployed with no person (REQ-15)
    self_hosted: bool = False
    deploy_root: str | None = None  # the supervisor's deploy folder (instances, proxy, supervisor.json)
    # the git remote unit loops on workers without the project's filesystem clone from and push to (docs/scale.md)
    git_remote: str | None = None


class Project(BaseModel):
    """project.json (a single JSON document, not ndjson). REQ-11."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    project_id: str
    target_path: str
    created: datetime = Field(default_factory=utcnow)
    settings: ProjectSettings = Field(default_factory=ProjectSettings)
