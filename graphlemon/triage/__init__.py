"""BugTriager (docs/triage.md): evidence checks, the deterministic triager, the agent path, self-check.

Public API (what the Integrator, the DevLoop and the CLI call):

    triage_run(project, run_id, *, executor=None, task_id=None, node_exec_id=None) -> TriageOutcome
    verify_all(root, evidence) -> EvidenceReport          extract_evidence
    diff_contract_vs_impl(project, unit_id) -> ContractDiff
    find_similar_bug(bugs, signature, *, unit_ids=None, text="") -> list[Bug]
    failure_signature(failure) -> str                      pass to BugTracker.open(signature=...)
    self_check(proposal, ...) -> (violations, evidence report)

Run-directory models the Integrator writes: IntegrationResult, IntegrationFailure,
Observation, HttpRequest, HttpTraceEntry; and UnitsFile / UnitEntry / Contract.
"""

from ..units import Contract, ContractResponse, HttpEndpoint, UnitEntry, UnitsFile
from .agenttools import diff_contract_vs_impl
from .evidence_check import EvidenceCheck, EvidenceReport, resolve_in_project, verify_all, verify_one
from .history import failure_signature, find_similar_bug
from .rundir import HttpRequest, HttpTraceEntry, IntegrationFailure, IntegrationResult, Observation
from .triager import TriageOutcome, triage_run
from .verdict import TriagerOutput, TriageVerdict, Violation
from .verdict_selfcheck import self_check

__all__ = [
    "Contract", "ContractResponse", "EvidenceCheck", "EvidenceReport", "HttpEndpoint", "HttpRequest", "HttpTraceEntry",
    "IntegrationFailure", "IntegrationResult", "Observation", "TriageOutcome", "TriageVerdict", "TriagerOutput", "UnitEntry",
    "UnitsFile", "Violation", "diff_contract_vs_impl", "failure_signature", "find_similar_bug", "resolve_in_project", "self_check",
    "triage_run", "verify_all", "verify_one",
]  # fmt: skip
