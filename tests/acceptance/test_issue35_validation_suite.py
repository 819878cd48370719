"""A project's declared validation suite (`[tool.graphlemon] validate`, docs/deploy.md "Self-development"), through
the CLI: the Validator runs the declared targets and the task's units' tests, not the whole suite. calc, scripted
executor (labelled so), `graphlemon run --engine direct`."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import CALC, make_repo

from graphlemon.models import RunRecord

pytestmark = pytest.mark.system


def test_the_validator_runs_the_declared_suite_and_the_units_tests(tmp_path, cli):
    """calc with an expensive suite (tests/heavy, marked `heavy`) its declaration deselects (`validate_marker`): the
    validation run leaves it out."""
    project = make_repo(tmp_path / "calc", CALC / "repo")
    for folder, count in (("extra", 1), ("heavy", 6)):
        (project.root / "tests" / folder).mkdir(parents=True)
        mark = "@pytest.mark.heavy\n" if folder == "heavy" else ""
        cases = "import pytest\n\n\n" + "".join(f"{mark}def test_{folder}_{n}():\n    assert True\n\n\n" for n in range(count))
        (project.root / "tests" / folder / f"test_{folder}.py").write_text(cases)
    _declare_calc = (project.root / "pyproject.toml").read_text() + (
        '\n[tool.graphlemon]\nvalidate = ["tests/extra", "tests/heavy"]\nvalidate_marker = "not heavy"\n'
    )
    (project.root / "pyproject.toml").write_text(_declare_calc)
    subprocess.run(["git", "add", "-A"], cwd=project.root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "suites"], cwd=project.root,
                   check=True)  # fmt: skip
    out = cli("run", "Build calc", "--engine", "direct", "--executor", "scripted", "--playbook",
              str(CALC / "playbook.yaml"), "--quiet", "--json", "-p", str(project.root), timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr
    task_id = json.loads(out.stdout)["task_id"]
    [validation] = [r for r in project.ledger.read_as("run", RunRecord) if r.scope == "validation"]
    assert validation.ok and validation.summary.total == 1 + 3 + 3  # extra, add and mul; the 6 heavy ones left out
    log = cli("logs", f"ne-{task_id}-validator-r0", "-p", str(project.root)).stdout
    assert "the declared validation suite (4 target(s), marked 'not heavy'): tests/extra tests/heavy tests/add tests/mul" in log
