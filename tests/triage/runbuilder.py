"""Build a small target project with one failed integration run, file by file (real files, a real git repo)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

RUN_ID = "run-int-20261203-1000"


def build_project(
    root: Path,
    *,
    units: list[dict],
    files: dict[str, str],
    sdd: str,
    failure: dict,
    trace: list[dict] = (),  # type: ignore[assignment]
    log: str = "",
    contracts: dict[str, dict] | None = None,
):
    """-> ProjectHandle. `files` are project-relative code files; `failure` one IntegrationFailure as a dict."""
    from graphlemon.project import init_project

    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    state = root / ".graphlemon"
    (state / "artifacts" / "sdd").mkdir(parents=True)
    (state / "artifacts" / "sdd" / "sdd.md").write_text(sdd)
    (state / "units.json").write_text(json.dumps({"units": units}, indent=1))
    for unit_id, contract in (contracts or {}).items():
        (state / "units" / unit_id).mkdir(parents=True)
        (state / "units" / unit_id / "contract.json").write_text(json.dumps(contract, indent=1))
    run = state / "integration" / "runs" / RUN_ID
    run.mkdir(parents=True)
    result = {
        "run_id": RUN_ID,
        "ok": False,
        "summary": {"total": 2, "passed": 1, "failed": 1},
        "failures": [{"step": 0, "ts": "2026-12-03T10:00:05Z", **failure}],
    }
    (run / "result.json").write_text(json.dumps(result, indent=2))
    (run / "http-trace.ndjson").write_text("".join(json.dumps(t) + "\n" for t in trace))
    (run / "process.log").write_text(log)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return init_project(root).project
