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


# A provider whose contract.json states 400 where the SDD states 409 for a taken slot (contract_mismatch, the trace
# answering what the contract says): the patch gate's and the approval's project.
UNITS = [{"unit_id": "appointments", "code": ["appointments"]}, {"unit_id": "kiosk", "code": ["kiosk"]}]
TABLE = (
    "# Clinic\n\n## appointments\n\n### POST /appointments\n\n| status | when |\n|---|---|\n"
    "| 201 | the slot was booked |\n| 409 | the slot is already taken |\n"
)
CONTRACT = {"unit_id": "appointments", "exports": {"http": [{"method": "POST", "path": "/appointments",
            "responses": {"201": "booked", "400": "the slot is taken"}}]}}  # fmt: skip


def appointments_project(root: Path, sdd: str, *, traced: bool = True, got: int = 400):
    failure = {"case": "book-a-taken-slot", "involves": ["appointments"], "description": "a taken slot is refused",
               "request": {"method": "POST", "path": "/appointments", "body": {"slot": "09:00"}},
               "expected": {"status": 409}, "got": {"status": got, "body": {"error": "slot taken"}}}  # fmt: skip
    trace = [{"case": "book-a-taken-slot", "step": 0, "unit_id": "appointments", "method": "POST",
              "url": "http://127.0.0.1:8700/appointments", "status": got, "response_body": {"error": "slot taken"}}]  # fmt: skip
    return build_project(root, units=UNITS, files={"appointments/app.py": "x = 1\n", "kiosk/app.js": "1\n"}, sdd=sdd,
                         failure=failure, trace=trace if traced else [], contracts={"appointments": CONTRACT})  # fmt: skip
