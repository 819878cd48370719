"""What may enter the sandbox at all, and what the sandbox may leave behind (issue 43; sbxred's c02, c21-c24, c31,
c34): only the work tree of the person's repository (never their ignored `.env`), a scrubbed environment, and no
file with a setuid or setgid bit. The attacks run only inside the real sandbox, through the loop's own path (a unit
worktree made by `Worktrees`, the tester's confinement `for_workdir`, real bwrap and real pytest)."""

from __future__ import annotations

import json
import stat

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.confine import bwrap_available, for_workdir  # noqa: F401 - read by the skipif string condition
from graphlemon.testrun.environment import agent_process_env
from graphlemon.worktrees import Worktrees

needs_bwrap = pytest.mark.skipif("bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)")

SET_ID = r"""
import json, os, pathlib, shutil, stat
seen = {}
def attempt(name, fn):
    try:
        fn()
        seen[name] = "done"
    except OSError as exc:
        seen[name] = f"{type(exc).__name__}: {exc.strerror}"
build = pathlib.Path("build")
build.mkdir(exist_ok=True)
for name in ("chmod", "fchmod", "open", "mknod", "chmod_g"):
    shutil.copyfile("/usr/bin/id", build / name)
attempt("chmod", lambda: os.chmod(build / "chmod", 0o4755))
attempt("chmod_g", lambda: os.chmod(build / "chmod_g", 0o2755))
def fchmod():
    fd = os.open(build / "fchmod", os.O_RDONLY)
    try:
        os.fchmod(fd, 0o6755)
    finally:
        os.close(fd)
attempt("fchmod", fchmod)
attempt("open", lambda: os.close(os.open(build / "created", os.O_WRONLY | os.O_CREAT, 0o4755)))
attempt("mknod", lambda: os.mknod(build / "node", stat.S_IFREG | 0o4755))
attempt("plain_chmod", lambda: os.chmod(build / "open", 0o755))
pathlib.Path("seen.json").write_text(json.dumps(seen))
"""

PERSON = r"""
import json, os, pathlib
seen = {}
repo = pathlib.Path(os.environ["PERSON_REPO"])
for rel in (".env", "data/local.db", "README.md"):
    try:
        seen[rel] = (repo / rel).read_text()
    except OSError as exc:
        seen[rel] = type(exc).__name__
try:
    seen["listing"] = sorted(os.listdir(repo))
except OSError as exc:
    seen["listing"] = type(exc).__name__
seen["modules"] = sorted(os.listdir(repo / "node_modules"))
pathlib.Path("seen.json").write_text(json.dumps(seen))
"""


GIT_INSIDE = r"""
import json, os, pathlib, subprocess
seen = {}
common = subprocess.run(["git", "rev-parse", "--git-common-dir"], capture_output=True, text=True).stdout.strip()
seen["config"] = pathlib.Path(common, "config").read_text()
seen["status"] = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True).returncode
seen["bare"] = subprocess.run(["git", "config", "core.bare"], capture_output=True, text=True).stdout.strip()
pathlib.Path("seen.json").write_text(json.dumps(seen))
"""


@pytest.fixture
def unit(project):
    wt = Worktrees(project.root, "task-reach", project.state_dir).unit("u1")
    (wt.path / "tests").mkdir()
    (wt.path / "tests" / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    return project, wt


@needs_bwrap
@pytest.mark.system
def test_no_file_the_sandbox_writes_gets_a_setuid_or_setgid_bit(unit):
    """sbxred c02: as root the work tree is idmapped, so a setuid file written inside would be a setuid-root program
    on the host; every way of setting the bit is refused (EPERM), a plain chmod still works."""
    project, wt = unit
    (wt.path / "tests" / "conftest.py").write_text(SET_ID)
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120,
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.confinement == "bwrap" and result.ok, result.output_tail
    seen = json.loads((wt.path / "seen.json").read_text())
    for name in ("chmod", "chmod_g", "fchmod", "open", "mknod"):
        assert seen[name].startswith("PermissionError"), (name, seen[name])
    assert seen["plain_chmod"] == "done"
    planted = [p for p in (wt.path / "build").rglob("*") if p.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID)]
    assert planted == []


@needs_bwrap
@pytest.mark.system
def test_the_person_s_work_tree_is_not_shown_only_its_dependencies(unit):
    """sbxred c21, c34: the person's ignored `.env` and local database, and their tree at all, are not in the
    sandbox; the repository's node_modules is, read-only."""
    project, wt = unit
    (project.root / ".env").write_text("DB_PASSWORD=reach-canary\n")
    (project.root / "data").mkdir()
    (project.root / "data" / "local.db").write_text("reach-canary-db\n")
    (project.root / "node_modules" / "left-pad").mkdir(parents=True)
    (wt.path / "tests" / "conftest.py").write_text(PERSON)
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120, env={"PERSON_REPO": str(project.root)},
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.confinement == "bwrap" and result.ok, result.output_tail
    seen = json.loads((wt.path / "seen.json").read_text())
    assert seen[".env"] == seen["data/local.db"] == seen["README.md"] == "FileNotFoundError", seen
    assert "reach-canary" not in json.dumps(seen)
    assert set(seen["listing"]) <= {".git", ".graphlemon", "node_modules"}, seen["listing"]
    assert seen["modules"] == ["left-pad"]


def test_claude_gets_a_cloud_provider_s_variables_only_when_that_provider_is_chosen():
    """sbxred c31: a person's AWS session and Google key are not Claude Code's unless it is told to use Bedrock or
    Vertex; its own key is."""
    person = {"ANTHROPIC_API_KEY": "k", "AWS_SESSION_TOKEN": "s", "AWS_ACCESS_KEY_ID": "a", "GOOGLE_API_KEY": "g",
              "CLOUD_ML_REGION": "r", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer t", "PATH": "/usr/bin"}  # fmt: skip
    assert set(agent_process_env(base=person)) & set(person) == {"ANTHROPIC_API_KEY", "PATH"}
    bedrock = agent_process_env(base={**person, "CLAUDE_CODE_USE_BEDROCK": "1"})
    assert {"AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"} <= set(bedrock) and "GOOGLE_API_KEY" not in bedrock
    vertex = agent_process_env(base={**person, "CLAUDE_CODE_USE_VERTEX": "true"})
    assert {"GOOGLE_API_KEY", "CLOUD_ML_REGION"} <= set(vertex) and "AWS_SESSION_TOKEN" not in vertex
    assert "OTEL_EXPORTER_OTLP_HEADERS" in agent_process_env(base={**person, "CLAUDE_CODE_ENABLE_TELEMETRY": "1"})


@needs_bwrap
@pytest.mark.system
def test_git_inside_sees_the_repository_s_format_but_no_remote_url_or_credential_setting(unit):
    """A neighbour of sbxred c21: the person's `.git/config` holds a token in a remote's URL and an HTTP header;
    the sandbox's git works on a copy without them."""
    project, wt = unit
    config = project.root / ".git" / "config"
    config.write_text(
        config.read_text() + '[remote "origin"]\n\turl = https://me:ghp_reachcanary@example.com/r\n'
        '[http]\n\textraHeader = Authorization: Bearer reachcanary2\n[user]\n\tname = "A \\"B\\""\n'
    )
    (wt.path / "tests" / "conftest.py").write_text(GIT_INSIDE)
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120,
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.confinement == "bwrap" and result.ok, result.output_tail
    seen = json.loads((wt.path / "seen.json").read_text())
    assert "reachcanary" not in seen["config"] and "remote" not in seen["config"]
    assert seen["status"] == 0 and seen["bare"] == "false" and 'name = "A \\"B\\""' in seen["config"]
    assert "ghp_reachcanary" in config.read_text()  # the person's own file is untouched
