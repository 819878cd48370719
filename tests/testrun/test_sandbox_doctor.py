"""`graphlemon doctor sandbox` as a real process: every promise checked from inside a confined run; exit 1 where
one does not hold (here: no bubblewrap on PATH)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.testrun.confine import bwrap_available  # noqa: F401 - read by the skipif string condition

pytestmark = pytest.mark.system

GRAPHLEMON = [sys.executable, "-m", "graphlemon"]


def _doctor(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*GRAPHLEMON, "doctor", "sandbox", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=cwd)  # fmt: skip


@pytest.mark.skipif("bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)")
def test_every_promise_holds_here_and_the_project_limits_are_the_ones_checked(project):
    from graphlemon.models import SandboxSettings
    from graphlemon.project import update_settings

    update_settings(project, sandbox=SandboxSettings(open_files=333, processes=77).model_dump())
    out = _doctor("--json", "-p", str(project.root))
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] and all(c["ok"] for c in checks.values())
    assert checks["uid/gid inside"]["seen"] != "0/0" and checks["effective capabilities"]["seen"] == "0" * 16
    assert checks["limit open_files"]["seen"] == "333" and checks["limit processes"]["seen"] == "77"
    assert checks["mount"]["seen"].startswith("refused") and checks["network"]["seen"].startswith("none")
    assert not any(m.startswith(("/run ", "/var/run ", "/home ")) for m in report["mounts"])
    # issue 43's wall: the host id behind the sandbox's user, /proc/sys, /dev/shm, the quota, the toolchain mounts
    host_id = checks["uid mapping"]["seen"].split(" -> ")[1].split()[0]
    assert host_id != "0" if os.geteuid() == 0 else checks["uid mapping"]["ok"]
    assert checks["/proc/sys read-only"]["seen"].startswith("core_pattern writable: False")
    assert checks["/dev/shm size"]["seen"].startswith("256 MB") and "stopped" in checks["work-tree quota"]["seen"]
    assert checks["credential files in toolchain mounts"]["seen"] == "none"
    # sbxred's c02 and c21: no setuid bit, and of the person's tree only its git dir and state folder are there
    assert checks["setuid bit"]["seen"].endswith("refused (Operation not permitted)")
    assert checks["person's work tree"]["seen"] == "only .graphlemon"  # the doctor's work tree is no git work tree
    # the claude_code backend's process: the same sandbox, its own config folder, only the egress proxy out
    assert checks["claude_code: uid/gid inside"]["seen"] != "0/0" and checks["claude_code: seccomp filter"]["ok"]
    assert checks["claude_code: mount"]["seen"].startswith("refused")
    assert checks["claude_code: network"]["seen"].startswith("none")
    assert checks["claude_code: egress only through the proxy"]["ok"]
    assert "discarded" in checks["claude_code: config folder per turn"]["seen"]
    assert checks["claude_code: limit address_space"]["seen"] == "unlimited"
    assert checks["claude_code: limit open_files"]["seen"] == "333"
    text = _doctor("-p", str(project.root))
    assert text.returncode == 0 and "holds on this machine" in text.stdout


def test_without_bubblewrap_the_promise_does_not_hold_and_the_exit_code_says_so(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "git").symlink_to("/usr/bin/git")
    out = _doctor(env={"PATH": str(bare)}, cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL" in out.stdout and "bwrap" in out.stdout and "does NOT hold" in out.stdout
