"""`graphlemon doctor sandbox`: what a confined run can and cannot do on this machine, checked from inside one.

It starts `sandbox_probe.py` exactly as a test run is started (the same bwrap command line, the project's limits
when run in a project) and compares what the probe saw with each promise of docs/agents.md ("What the sandbox
promises"); then a run that writes past a small work-tree quota (it must be stopped, said `resource_limit`); then
again as the claude_code backend's `claude` process is started (`AgentProcessConfinement`: a config folder of the
turn's own, a network namespace whose only way out is an egress proxy, here one that allows a local upstream the
doctor serves, no address-space limit), its checks named `claude_code: ...`. A promise that does not hold is a failed
check; the command exits non-zero when any check failed.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .agents.claude_config import TurnConfig, person_config_dir
from .agents.egress_proxy import EgressProxy, EgressRule
from .errors import GraphLemonError
from .testrun import cgroups, confine, root_identity, toolchain_mounts
from .testrun.environment import agent_process_env, confined_env, egress_env
from .testrun.launcher import QUOTA_LINE

PROBE = Path(__file__).resolve().with_name("sandbox_probe.py")
MB = 1024 * 1024
QUOTA_PROBE_MB = 16  # the quota of the doctor's own run, which writes four times as much
UPSTREAM = "doctor-upstream.invalid"  # the name the doctor's egress proxy allows, pinned to its local upstream


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
        asked = {"credential_names": sorted(toolchain_mounts.CREDENTIAL_NAMES)}
        if state_dir is not None:
            asked["person_tree"] = str(Path(state_dir).parent)
        seen = _probe(conf, Path(work), asked)
        quota = _quota(conf, Path(work))
        claude = _agent_checks(Path(work), state_dir)
    if isinstance(seen, dict):
        report.mounts, report.sockets = seen["mounts"], seen["sockets"]
    report.checks = [*_checks(seen, conf), quota, *claude]
    report.verdict = "holds" if all(c.ok for c in report.checks) else "broken"
    return report


def _probe(conf: confine.Confinement, work: Path, asked: dict, env: dict[str, str] | None = None) -> dict | str:
    """What the probe saw inside `conf`, or why it did not run there."""
    try:
        argv, _ = confine.wrap([sys.executable, str(PROBE), json.dumps(asked)], conf, cwd=work)
    except GraphLemonError as exc:
        return f"did not run inside the sandbox: {exc.message}"
    proc = subprocess.run(argv, cwd=work, env=env or confined_env(), capture_output=True, text=True, timeout=120)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return "did not run inside the sandbox: " + (proc.stderr or proc.stdout).strip()[-500:]


def _quota(conf: confine.Confinement, work: Path) -> Check:
    """A run that writes four times a small quota into its work tree is stopped while it writes."""
    small = replace(conf, settings=conf.settings.model_copy(update={"worktree_mb": QUOTA_PROBE_MB}))
    chunks = 4 * QUOTA_PROBE_MB
    fill = (
        f"import time\nwith open('fill.bin', 'wb') as fh:\n    for _ in range({chunks}):\n"
        "        fh.write(b'\\1' * 1048576); fh.flush(); time.sleep(0.02)\nprint('wrote it all')"
    )
    try:
        argv, _ = confine.wrap([sys.executable, "-c", fill], small, cwd=work)
        proc = subprocess.run(argv, cwd=work, env=confined_env(), capture_output=True, text=True, timeout=120)
    except (GraphLemonError, subprocess.TimeoutExpired, OSError) as exc:
        return Check(name="work-tree quota", seen=f"the quota run did not run: {exc}", ok=False)
    stopped = QUOTA_LINE in proc.stderr and "wrote it all" not in proc.stdout
    seen = f"a run writing {4 * QUOTA_PROBE_MB} MB past {QUOTA_PROBE_MB} MB: " + ("stopped (resource_limit)" if stopped
                                                                               else "NOT stopped")  # fmt: skip
    (work / "fill.bin").unlink(missing_ok=True)
    return Check(name="work-tree quota", seen=seen, ok=stopped)


def _agent_checks(work: Path, state_dir: Path | None) -> list[Check]:
    """The probe inside the sandbox the claude_code backend starts `claude` in, with a config folder of the turn's own
    and an egress proxy that allows only the doctor's local upstream; its checks named `claude_code: ...`."""
    upstream, loopback, abstract = _listeners()
    port = upstream.getsockname()[1]
    rule = EgressRule(UPSTREAM, port, "127.0.0.1")
    asked = {"credential_names": sorted(toolchain_mounts.CREDENTIAL_NAMES),
             "person_config": str(person_config_dir(os.environ)),
             "egress": {"allowed": f"{UPSTREAM}:{port}", "denied": ["example.com:443", f"127.0.0.1:{port}",
                        f"{UPSTREAM}:{port + 1 if port < 65535 else port - 1}"],
                        "loopback": loopback.getsockname()[1], "abstract": abstract.getsockname()[1:].decode()}}  # fmt: skip
    try:
        with TurnConfig.for_turn(os.environ) as config, EgressProxy([rule]) as proxy:
            conf = confine.for_agent_process(work, state_dir, program=sys.executable, writable=[config.folder],
                                             egress=proxy.socket_path, mode="required")  # fmt: skip
            env = {**agent_process_env(conf.settings.env), **egress_env(confine.EGRESS_PORT),
                   "CLAUDE_CONFIG_DIR": str(config.folder)}  # fmt: skip
            seen = _probe(conf, work, asked, env)
            findings = config.findings()
            folder = config.folder
    finally:
        for sock in (upstream, loopback, abstract):
            sock.close()
    checks = _checks(seen, conf)
    if isinstance(seen, dict):
        checks += [_config_check(seen, findings, folder), _egress_check(seen["egress"])]
    return [c.model_copy(update={"name": f"claude_code: {c.name}"}) for c in checks]


def _listeners() -> tuple[socket.socket, socket.socket, socket.socket]:
    """The doctor's local upstream (answers every connection), a host loopback service and a host abstract socket
    (neither must be reachable from inside)."""
    upstream = socket.create_server(("127.0.0.1", 0))
    loopback = socket.create_server(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0graphlemon-doctor-{os.getpid()}-{secrets.token_hex(4)}")
    abstract.listen(1)

    def serve() -> None:
        while True:
            try:
                upstream.accept()[0].close()
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    return upstream, loopback, abstract


def _config_check(seen: dict, findings: list, folder: Path) -> Check:
    own = seen.get("config_dir") == str(folder) and seen.get("config_writable") == "ALLOWED"
    judged = any(f.path == "settings.json" for f in findings)
    person = seen.get("person_config_visible")
    words = [
        "the turn's own, writable" if own else "NOT the turn's own",
        "the person's VISIBLE" if person else "the person's not there",
        f"a settings.json written inside {'judged' if judged else 'NOT judged'}",
        "KEPT" if folder.exists() else "discarded",
    ]
    return Check(name="config folder per turn", seen="; ".join(words), ok=own and judged and not person and not
                 folder.exists())  # fmt: skip


def _egress_check(seen: dict) -> Check:
    allowed = seen["allowed"].startswith("HTTP/1.1 200")
    denied = all(" 403 " in line for line in seen["denied"])
    closed = all(seen[k].startswith("refused") for k in ("loopback", "abstract")) and seen["outside"].startswith("none")
    text = (f"allowed host: {seen['allowed'][:40]}; other names, IP literals, ports: "
            f"{'403' if denied else seen['denied']}; host loopback {seen['loopback'][:30]}, abstract socket "
            f"{seen['abstract'][:30]}, outside {seen['outside'][:30]}")  # fmt: skip
    return Check(name="egress only through the proxy", seen=text, ok=allowed and denied and closed)


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
    checks.append(_uid_mapping(seen["uid_map"]))
    proc_sys_ok = not seen["core_pattern_writable"] and seen["write_hostname"].startswith("refused")
    checks.append(Check(name="/proc/sys read-only", seen=f"core_pattern writable: {seen['core_pattern_writable']}; "
                        f"own hostname: {seen['write_hostname']}", ok=proc_sys_ok))  # fmt: skip
    shm = conf.settings.shm_mb * MB
    checks.append(Check(name="/dev/shm size", seen=f"{seen['shm_bytes'] // MB} MB; /dev: {seen['write_dev']}",
                        ok=seen["shm_bytes"] == shm and seen["write_dev"].startswith("refused")))  # fmt: skip
    checks.append(Check(name="credential files in toolchain mounts", seen=", ".join(seen["credentials"]) or "none",
                        ok=not seen["credentials"]))  # fmt: skip
    checks.append(Check(name="setuid bit", seen=f"chmod 04755 in the work tree: {seen['set_id']}",
                        ok=seen["set_id"].startswith("refused")))  # fmt: skip
    if "person_tree" in seen:
        extra = sorted(set(seen["person_tree"]) - {".git", ".graphlemon", *confine.REPOSITORY_TOOLS})
        checks.append(Check(name="person's work tree", seen="only " + (", ".join(seen["person_tree"]) or "nothing")
                            if not extra else "VISIBLE: " + ", ".join(extra[:8]), ok=not extra))  # fmt: skip
    checks.append(Check(name="host paths visible", seen=", ".join(seen["host_paths"]) or "none",
                        ok=not seen["host_paths"]))  # fmt: skip
    checks.append(Check(name="unix sockets visible", seen=", ".join(seen["sockets"][:5]) or "none",
                        ok=not seen["sockets"]))  # fmt: skip
    checks.append(Check(name="network", seen=seen["network"], ok=seen["network"].startswith("none")))
    for name, value in expected.items():
        checks.append(Check(name=f"limit {name}", seen=limits.get(name, "?"), ok=limits.get(name) == value))
    checks.append(_process_bound())
    return checks


def _uid_mapping(inside: str) -> Check:
    """As root the sandbox's namespace is GraphLemon's own, one level under the host's: its map must name the
    unprivileged host id. As anyone else bwrap nests its namespaces, and an unprivileged user can map only itself."""
    if os.geteuid() != 0:
        seen = f"{inside} (bwrap's nested namespace); outside: uid {os.geteuid()}, the only id this user can map"
        return Check(name="uid mapping", seen=seen, ok=True)
    expected = str(root_identity.host_ids()[0])
    host = inside.split(" -> ")[-1]
    return Check(name="uid mapping", seen=f"{inside} outside", ok=host == expected and host != "0")


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
