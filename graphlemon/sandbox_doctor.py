"""`graphlemon doctor sandbox`: what a confined run can and cannot do on this machine, checked from inside one.

It starts `sandbox_probe.py` exactly as a test run is started (the same bwrap command line, the project's limits
when run in a project) and compares what the probe saw with each promise of docs/agents.md ("What the sandbox
promises"); then again as the claude_code backend's `claude` process is started (`AgentProcessConfinement`: network
allowed, no address-space limit), its checks named `claude_code: ...`. A promise that does not hold is a failed
check; the command exits non-zero when any check failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .testrun import cgroups, confine
from .testrun.environment import confined_env

PROBE = Path(__file__).resolve().with_name("sandbox_probe.py")
MB = 1024 * 1024


class Check(BaseModel):
    name: str
    seen: str
    ok: bool


class SandboxReport(BaseModel):
    host_uid: int
    bwrap: str | None
    why_not: str = ""
    checks: list[Check] = Field(default_factory=list)
    mounts: list[str] = Field(default_factory=list)
    sockets: list[str] = Field(default_factory=list)
    verdict: Literal["holds", "broken"] = "broken"

    @property
    def ok(self) -> bool:
        return self.verdict == "holds"


def diagnose(state_dir: Path | None = None) -> SandboxReport:
    """Run the probe confined (the project's sandbox settings when `state_dir` is given) and judge what it saw."""
    bwrap, why = confine.bwrap_available()
    report = SandboxReport(host_uid=os.geteuid(), bwrap=bwrap, why_not=why)
    if bwrap is None:
        report.checks.append(Check(name="confinement", seen=f"unavailable: {why}", ok=False))
        return report
    with tempfile.TemporaryDirectory(prefix="graphlemon-doctor-") as work:
        conf = confine.for_workdir(Path(work), state_dir, mode="required")
        agent = confine.for_agent_process(Path(work), state_dir, program=sys.executable, mode="required")
        seen, agent_seen = _probe(conf, Path(work)), _probe(agent, Path(work))
    if isinstance(seen, dict):
        report.mounts, report.sockets = seen["mounts"], seen["sockets"]
    claude = [c.model_copy(update={"name": f"claude_code: {c.name}"}) for c in _checks(agent_seen, agent)]
    report.checks = _checks(seen, conf) + claude
    report.verdict = "holds" if all(c.ok for c in report.checks) else "broken"
    return report


def _probe(conf: confine.Confinement, work: Path) -> dict | str:
    """What the probe saw inside `conf`, or why it did not run there."""
    argv, _ = confine.wrap([sys.executable, str(PROBE)], conf, cwd=work)
    proc = subprocess.run(argv, cwd=work, env=confined_env(), capture_output=True, text=True, timeout=120)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return "did not run inside the sandbox: " + (proc.stderr or proc.stdout).strip()[-500:]


def _checks(seen: dict | str, conf: confine.Confinement) -> list[Check]:
    if isinstance(seen, str):
        return [Check(name="probe", seen=seen, ok=False)]
    limits, settings = seen["limits"], conf.settings
    memory = conf.address_space_mb
    expected = {
        "processes": str(settings.processes), "file_size": str(settings.file_size_mb * MB),
        "open_files": str(settings.open_files), "cpu_seconds": str(settings.cpu_seconds),
        "address_space": "unlimited" if memory is None else str(memory * MB),
    }  # fmt: skip
    checks = [
        Check(name="uid/gid inside", seen=f"{seen['uid']}/{seen['gid']}", ok=seen["uid"] != 0 and seen["gid"] != 0),
        Check(name="effective capabilities", seen=seen["cap_eff"], ok=int(seen["cap_eff"], 16) == 0),
        Check(name="bounding capabilities", seen=seen["cap_bnd"], ok=int(seen["cap_bnd"], 16) == 0),
        Check(name="no_new_privs", seen=seen["no_new_privs"], ok=seen["no_new_privs"] == "1"),
        Check(name="seccomp filter", seen=f"mode {seen['seccomp']}", ok=seen["seccomp"] == "2"),
    ]
    for name in ("mount", "unshare_user", "ptrace_sibling", "write_proc_self_root", "write_root"):
        checks.append(Check(name=name.replace("_", " "), seen=seen[name], ok=seen[name].startswith("refused")))
    checks.append(Check(name="host paths visible", seen=", ".join(seen["host_paths"]) or "none",
                        ok=not seen["host_paths"]))  # fmt: skip
    checks.append(Check(name="unix sockets visible", seen=", ".join(seen["sockets"][:5]) or "none",
                        ok=not seen["sockets"]))  # fmt: skip
    if conf.network:  # the agent's own process reaches its API: whatever it sees is the promise
        checks.append(Check(name="network", seen=f"allowed ({seen['network']})", ok=True))
    else:
        checks.append(Check(name="network", seen=seen["network"], ok=seen["network"].startswith("none")))
    for name, value in expected.items():
        checks.append(Check(name=f"limit {name}", seen=limits.get(name, "?"), ok=limits.get(name) == value))
    checks.append(_process_bound())
    return checks


def _process_bound() -> Check:
    """RLIMIT_NPROC binds every user but root; as root the bound is a pids cgroup."""
    if os.geteuid() != 0:
        return Check(name="process bound", seen="RLIMIT_NPROC (this user)", ok=True)
    base = cgroups.pids_base()
    held = base is not None and cgroups.new_group(16) is not None
    seen = f"pids cgroup under {base}" if held else "none: root is exempt from RLIMIT_NPROC and no pids cgroup"
    return Check(name="process bound", seen=seen, ok=held)


def render(report: SandboxReport) -> str:
    lines = [f"host uid: {report.host_uid}   bwrap: {report.bwrap or 'missing'}"]
    width = max((len(c.name) for c in report.checks), default=10)
    for check in report.checks:
        lines.append(f"  {'ok  ' if check.ok else 'FAIL'}  {check.name.ljust(width)}  {check.seen}")
    if report.mounts:
        lines.append("mounts inside: " + ", ".join(report.mounts))
    lines.append(f"the sandbox's promise {'holds' if report.ok else 'does NOT hold'} on this machine")
    return "\n".join(lines)
