"""No secret reaches a record: canary keys in GraphLemon's environment, a target test that prints its
own environment and its parents' (`/proc/<pid>/environ`), and nothing under `.graphlemon/` holds a canary.

Keeping a test from reading its parents' environment at all is the sandbox's part (a PID namespace); this is the
second line: whatever a test prints, the ledger, logs and result files are redacted where they are written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.redact import MASK, Redactor, redact

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tester" / "todo_fastapi"

CANARIES = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-CANARYanthropic0123456789abcdef",
    "OPENAI_API_KEY": "sk-proj-CANARYopenai0123456789abcdefghijklmnop",
    "GITHUB_TOKEN": "ghp_CANARYgithub0123456789abcdefghijklmn",
    "AWS_SECRET_ACCESS_KEY": "CANARYaws/secret+0123456789abcdefghijkl",
    "ACME_DEPLOY_SECRET": 'CANARY-generic "quoted" \\ value 42',
}

LEAKY_TEST = """
import os


def _parents():
    pid, seen = os.getppid(), []
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                seen.append(fh.read().replace(b"\\0", b"\\n").decode("utf-8", "replace"))
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
    return seen


def _secrets_first(text):  # a thief reads the keys first: they lead the message, whatever its length
    lines = text.splitlines()
    return "\\n".join(sorted(lines, key=lambda line: not any(w in line for w in ("KEY", "TOKEN", "SECRET"))))


def test_prints_every_environment_it_can_read():
    print(dict(os.environ))
    print("\\n".join(_parents()))
    assert os.environ == {}, "parents:\\n" + _secrets_first("\\n".join(_parents())) + "\\nown: " + repr(dict(os.environ))
"""


def test_redactor_masks_environment_secrets_and_key_shapes(monkeypatch):
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    text = json.dumps({"out": " ".join(CANARIES.values()), "id": "task-20261203-134148-da79"})
    clean = redact(text)
    assert not any(value in clean for value in CANARIES.values())
    assert not any(json.dumps(value)[1:-1] in clean for value in CANARIES.values())  # the JSON-escaped form too
    assert json.loads(clean)["id"] == "task-20261203-134148-da79"  # an id that contains "sk-" is not a key
    assert MASK in json.loads(clean)["out"]
    monkeypatch.delenv("ACME_DEPLOY_SECRET")
    assert CANARIES["ACME_DEPLOY_SECRET"] in redact(CANARIES["ACME_DEPLOY_SECRET"])  # no longer a secret here
    assert Redactor(["short-lived-value"], use_environment=False).text("a short-lived-value b") == f"a {MASK} b"
    assert redact("TIMEOUT=30 PORT=8080 a=b") == "TIMEOUT=30 PORT=8080 a=b"  # ordinary text is left alone


@pytest.fixture
def leaky_project(tmp_path: Path) -> Path:
    from graphlemon.project import init_project

    repo = tmp_path / "todo"
    shutil.copytree(FIXTURE / "repo", repo)
    (repo / "tests" / "todo_be").mkdir(parents=True)
    (repo / "tests" / "todo_be" / "test_leak.py").write_text(LEAKY_TEST)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "todo service"], cwd=repo, check=True)
    project = init_project(repo).project
    shutil.copytree(FIXTURE / "state", project.state_dir, dirs_exist_ok=True)
    return repo


@pytest.mark.system
@pytest.mark.parametrize("confinement", ["off", "required"])
def test_a_test_printing_its_parents_environment_leaves_no_canary_under_graphlemon(leaky_project: Path, confinement):
    """Unconfined, the test reads the canaries and the one redactor masks them before anything is written;
    confined (bwrap: its own pid namespace and a clean environment), it cannot read them at all."""
    env = {**os.environ, **CANARIES, "GRAPHLEMON_TEST_CONFINEMENT": confinement}
    out = subprocess.run(
        [sys.executable, "-m", "graphlemon", "tester", "run", "--unit", "todo-be", "--executor", "none", "--json",
         "-p", str(leaky_project)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert "Traceback" not in out.stderr, out.stderr
    state = leaky_project / ".graphlemon"
    records = (state / "runs.ndjson").read_text()
    assert "test_prints_every_environment_it_can_read" in records, "the leaky test did not run"
    if confinement == "off":
        assert MASK in records, "the test's output carried no secret to redact: the probe proved nothing"
    else:
        assert '"confinement":"bwrap"' in records and MASK not in records  # nothing to redact: nothing leaked
    leaks = [
        (str(path.relative_to(state)), name)
        for path in state.rglob("*")
        if path.is_file()
        for name, value in CANARIES.items()
        if value.encode() in path.read_bytes() or json.dumps(value)[1:-1].encode() in path.read_bytes()
    ]
    assert leaks == [], f"canary secrets written under .graphlemon/: {leaks}"
    committed = subprocess.run(["git", "grep", "-I", "CANARY", "HEAD"], cwd=leaky_project, capture_output=True)
    assert committed.stdout == b""


@pytest.mark.system
def test_prefect_artifacts_carry_no_canary(prefect_harness, monkeypatch):
    from prefect import flow
    from prefect_stack import artifacts_keyed

    from graphlemon.tasks._redacted_artifacts import create_markdown_artifact, create_table_artifact

    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    leaked = " ".join(CANARIES.values())

    @flow
    def publish() -> None:
        create_markdown_artifact(markdown=f"test output: {leaked}", key="canary-md", description=leaked)
        create_table_artifact(table=[{"message": leaked, "n": 1}], key="canary-table")

    publish()
    stored = artifacts_keyed("canary-md", "canary-table")
    assert len(stored) == 2
    text = json.dumps([a.model_dump(mode="json") for a in stored])
    assert MASK in text
    assert not any(value in text or json.dumps(value)[1:-1] in text for value in CANARIES.values())
