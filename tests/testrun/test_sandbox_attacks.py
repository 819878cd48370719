"""Agent-written tests attack the sandbox from inside, through the loop's own path: a real project, a unit
worktree made by `Worktrees`, the tester's confinement (`for_workdir`), real bwrap and real pytest.

CI runs as root: these are the attacks that root's capabilities used to let through. Each attack writes what
happened into `seen.json` in the work tree (which stays writable); the test then checks the host.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.models import SandboxSettings
from graphlemon.project import update_settings
from graphlemon.testrun import run_tests
from graphlemon.testrun.confine import bwrap_available, for_workdir  # noqa: F401 - read by the skipif string condition
from graphlemon.testrun.toolchain_mounts import HOME_VAR_LAYOUTS
from graphlemon.worktrees import Worktrees

pytestmark = pytest.mark.skipif("bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)")

ATTEMPT = r'''
import json, os, pathlib
seen = {}
def attempt(name, fn):
    try:
        out = fn()
        seen[name] = "done" if out is None else out
    except BaseException as exc:  # noqa: BLE001 - every way of failing is an answer here
        seen[name] = f"{type(exc).__name__}: {exc}"[:200]
'''

ATTACKS = ATTEMPT + r'''
import ctypes, signal, socket, subprocess, time

T = json.loads(os.environ["ATTACK_TARGETS"])

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()

seen["uid"] = os.getuid()
seen["cap_eff"] = status("CapEff")
seen["cap_bnd"] = status("CapBnd")
seen["no_new_privs"] = status("NoNewPrivs")
seen["seccomp"] = status("Seccomp")
def sh(cmd):
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)
    return f"exit {proc.returncode}: {proc.stderr.strip()[:150]}"
seen["remount"] = sh("umount -l /tmp; mount -o remount,bind,rw / && touch " + T["outside"])
seen["remount_workdir"] = sh("mount -o remount,bind,rw " + T["repo"])
attempt("outside", lambda: pathlib.Path(T["outside"]).write_text("pwned"))
attempt("hook", lambda: pathlib.Path(T["hook"]).write_text("#!/bin/sh\ntouch " + T["outside"] + "\n"))
attempt("pointer", lambda: pathlib.Path(".git").write_text("gitdir: tests/evil\n"))
attempt("proc_root", lambda: pathlib.Path("/proc/self/root" + T["outside"]).write_text("pwned"))
attempt("proc1_root", lambda: pathlib.Path("/proc/1/root" + T["outside"]).write_text("pwned"))
libc = ctypes.CDLL(None, use_errno=True)
def unshare_user():
    if libc.unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare refused")
attempt("unshare", unshare_user)
attempt("unshare_cmd", lambda: sh("unshare -Ur id"))
sibling = subprocess.Popen(["sleep", "30"])
def ptrace_sibling():
    if libc.ptrace(16, sibling.pid, 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace refused")
attempt("ptrace", ptrace_sibling)
sibling.kill()
def connect_unix(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(path)
for i, path in enumerate(T["sockets"]):
    attempt(f"socket{i}", lambda p=path: connect_unix(p))
attempt("abstract", lambda: connect_unix("\0" + T["abstract"]))
attempt("net", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
seen["visible_roots"] = sorted(os.listdir("/"))
seen["env"] = sorted(os.environ)
seen["home_listing"] = sorted(os.listdir(os.environ["HOME"]))
pathlib.Path("seen.json").write_text(json.dumps(seen))
'''

LIMITS = r'''
import json, os, pathlib, subprocess
seen = {}
children = []
try:
    for _ in range(150):
        children.append(subprocess.Popen(["sleep", "20"]))
except OSError as exc:
    seen["fork_error"] = type(exc).__name__
seen["forked"] = len(children)
for child in children:
    child.kill()
def fill(path, mb):
    try:
        with open(path, "wb") as fh:
            for _ in range(mb):
                fh.write(b"\0" * 1024 * 1024)
        return "done"
    except OSError as exc:
        return type(exc).__name__ + ": " + str(exc.strerror)
    finally:
        pathlib.Path(path).unlink(missing_ok=True)
seen["tmp"] = fill("/tmp/big", 40)
seen["worktree_file"] = fill("big.bin", 80)
pathlib.Path("seen.json").write_text(json.dumps(seen))
'''


@pytest.fixture
def unit(project):
    """A unit worktree as the loop makes it (under the project's .graphlemon/worktrees/)."""
    wt = Worktrees(project.root, "task-attack", project.state_dir).unit("u1")
    (wt.path / "tests").mkdir()
    (wt.path / "tests" / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    return project, wt


def _listen_unix(path: Path | str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    return server


@pytest.mark.system
def test_root_gets_no_capability_and_cannot_remount_nor_reach_host_paths_or_sockets(unit, tmp_path):
    project, wt = unit
    outside = tmp_path / "outside" / "pwned.txt"
    outside.parent.mkdir()
    var_tmp = Path("/var/tmp") / f"graphlemon-attack-{os.getpid()}.sock"
    servers = [_listen_unix(tmp_path / "host.sock"), _listen_unix(var_tmp)]
    abstract = f"graphlemon-attack-{os.getpid()}"
    servers.append(socket.socket(socket.AF_UNIX))
    servers[-1].bind("\0" + abstract)
    servers[-1].listen(1)
    hook = project.root / ".git" / "hooks" / "post-commit"
    targets = {
        "outside": str(outside), "hook": str(hook), "repo": str(project.root), "abstract": abstract,
        "sockets": [str(tmp_path / "host.sock"), str(var_tmp)],
    }  # fmt: skip
    (wt.path / "tests" / "conftest.py").write_text(ATTACKS)
    try:
        result = run_tests(
            wt.path, ["tests"], framework="pytest", timeout=120, confinement=for_workdir(wt.path, project.state_dir),
            env={"ATTACK_TARGETS": json.dumps(targets)},
        )  # fmt: skip
    finally:
        for server in servers:
            server.close()
        var_tmp.unlink(missing_ok=True)
    assert result.confinement == "bwrap" and result.ok, result.output_tail
    seen = json.loads((wt.path / "seen.json").read_text())
    assert seen["uid"] != 0 and seen["cap_eff"] == "0000000000000000" and seen["cap_bnd"] == "0000000000000000"
    assert seen["no_new_privs"] == "1" and seen["seccomp"] == "2"
    assert not outside.exists() and not hook.exists()
    assert seen["remount"].startswith("exit") and not seen["remount"].startswith("exit 0")
    for name in ("outside", "hook", "pointer", "proc_root", "proc1_root", "unshare", "ptrace", "abstract", "net"):
        assert seen[name] != "done", (name, seen[name])
    assert not seen["unshare_cmd"].startswith("exit 0")
    assert seen["socket0"] != "done" and seen["socket1"] != "done"
    assert (wt.path / ".git").read_text().startswith("gitdir:") and "evil" not in (wt.path / ".git").read_text()
    assert not {"run", "var/run", "home", "srv", "opt", "mnt", "media"} & set(seen["visible_roots"])
    # the home shows nothing but toolchain homes' install parts (docs/agents.md): `.cargo`, `.rustup`, and `go` once a
    # go command has made the default GOPATH (~/go/pkg/mod/cache: a go test of the corpus may have, earlier in the run)
    assert all(name.startswith(".") or name in HOME_VAR_LAYOUTS.values() for name in seen["home_listing"]), seen
    assert not {".ssh", ".aws", ".gitconfig", ".npmrc", ".netrc", ".bashrc"} & set(seen["home_listing"])


@pytest.mark.system
def test_the_environment_is_an_allow_list_plus_what_the_project_declares(unit, monkeypatch):
    project, wt = unit
    update_settings(project, sandbox=SandboxSettings(env=["MY_FIXTURE_DIR"]).model_dump())
    monkeypatch.setenv("PGPASSWORD", "hunter2-very-secret")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:hunter2-very-secret@db.internal/app")
    monkeypatch.setenv("SOME_RANDOM_SETTING", "x")
    monkeypatch.setenv("MY_FIXTURE_DIR", "/data/fixtures")
    (wt.path / "tests" / "conftest.py").write_text(
        "import json, os, pathlib\npathlib.Path('env.json').write_text(json.dumps(dict(os.environ)))\n"
    )
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120,
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.ok, result.output_tail
    env = json.loads((wt.path / "env.json").read_text())
    assert {"PGPASSWORD", "DATABASE_URL", "SOME_RANDOM_SETTING"}.isdisjoint(env)
    assert env["MY_FIXTURE_DIR"] == "/data/fixtures" and env["TMPDIR"] == "/tmp" and "PATH" in env
    assert "hunter2" not in json.dumps(env)


@pytest.mark.system
def test_limits_bound_processes_file_size_and_the_private_tmp(unit):
    project, wt = unit
    update_settings(project, sandbox=SandboxSettings(processes=64, file_size_mb=64, tmp_mb=16).model_dump())
    (wt.path / "tests" / "conftest.py").write_text(LIMITS)
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120,
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.confinement == "bwrap" and result.ok, result.output_tail
    seen = json.loads((wt.path / "seen.json").read_text())
    assert seen["forked"] < 64 and seen["fork_error"], seen  # bounded, root included
    assert seen["tmp"].startswith("OSError") and "space" in seen["tmp"], seen
    assert seen["worktree_file"].startswith("OSError") and "large" in seen["worktree_file"], seen
    assert not (wt.path / "big.bin").exists()
    assert not _processes(b"sleep\x0020\x00")  # nothing outlives the run


def _processes(cmdline: bytes) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == cmdline:
                found.append(entry.name)
        except OSError:
            continue
    return found


@pytest.mark.system
def test_an_interpreter_hidden_from_the_sandbox_is_a_start_failure_not_a_failing_test(unit, tmp_path):
    """A tool that lives only where the sandbox does not show it (here inside the project's hidden
    `.graphlemon/`) cannot start: the run is a start failure (crashed, "could not start ... inside the sandbox"),
    not a failing test."""
    project, wt = unit
    hidden_bin = project.state_dir / "private-tools"
    hidden_bin.mkdir()
    tool = hidden_bin / "mytool"
    tool.write_text(f"#!{sys.executable}\nprint('1 passed')\n")
    tool.chmod(0o755)
    result = run_tests(wt.path, command=str(tool), timeout=60, confinement=for_workdir(wt.path, project.state_dir))
    assert result.confinement == "bwrap" and not result.ok and result.crashed
    assert any("could not start inside the sandbox" in f.message for f in result.failures), result.failures


def test_the_commit_after_a_confined_run_runs_no_hook(unit, tmp_path):
    """Even if a hook existed in the repository, the loop's commit would not run it (the git runner's rule)."""
    project, wt = unit
    marker = tmp_path / "hook-ran"
    hooks = project.root / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    (wt.path / "tests" / "test_new.py").write_text("def test_new():\n    assert 1\n")
    sha = Worktrees(project.root, "task-attack", project.state_dir).commit_all(wt, "tester: tests")
    assert sha and not marker.exists()
    subprocess.run(["git", "log", "-1"], cwd=wt.path, check=True, capture_output=True)


@pytest.mark.system
def test_a_run_stopped_by_a_limit_says_resource_limit_and_is_not_a_failing_test(unit):
    project, wt = unit
    update_settings(project, sandbox=SandboxSettings(cpu_seconds=1).model_dump())
    (wt.path / "tests" / "test_spin.py").write_text("def test_spin():\n    while True:\n        pass\n")
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120,
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.confinement == "bwrap" and not result.ok and result.crashed
    assert "resource_limit: the run was stopped by the sandbox's cpu_seconds limit" in result.output_tail


def test_records_mask_url_passwords_and_password_like_names_but_not_working_folders(monkeypatch):
    from graphlemon.redact import MASK, Redactor, is_secret_name

    monkeypatch.setenv("DATABASE_URL", "postgres://app:s3cret-db-pass@db.internal:5432/app")
    monkeypatch.setenv("PGPASSWORD", "another-secret-1")
    monkeypatch.setenv("MYSQL_PWD", "third-secret-22")
    text = Redactor().text("dsn=postgres://app:s3cret-db-pass@db.internal:5432/app pw s3cret-db-pass another-secret-1 "
                           "third-secret-22 redis://:token123@cache/0 cwd=/work/project")  # fmt: skip
    assert "s3cret" not in text and "another-secret" not in text and "third-secret" not in text
    assert "token123" not in text and f"postgres://app:{MASK}@db.internal" in text and "cwd=/work/project" in text
    assert {n for n in ("PGPASSWORD", "MYSQL_PWD", "AWS_CREDENTIALS", "MY_SECRET_X", "PWD", "OLDPWD", "PATH")
            if is_secret_name(n)} == {"PGPASSWORD", "MYSQL_PWD", "AWS_CREDENTIALS", "MY_SECRET_X"}  # fmt: skip


WALL = ATTEMPT + r'''

# class 0: whoever runs GraphLemon, no host-wide kernel setting passes the permission check; the sandbox's own
# hostname (its own UTS namespace: harmless if it were written) is the one write tried
for name in ("kernel/core_pattern", "vm/drop_caches", "kernel/panic", "fs/protected_symlinks", "kernel/modprobe"):
    seen["writable:" + name] = os.access("/proc/sys/" + name, os.W_OK)
attempt("hostname", lambda: open("/proc/sys/kernel/hostname", "w").write("sandbox") and None)
seen["uid_map"] = open("/proc/self/uid_map").read().split("\n")
attempt("worktree_write", lambda: pathlib.Path("made-inside.txt").write_text("inside") and None)
attempt("worktree_chmod", lambda: os.chmod("made-inside.txt", 0o600))
attempt("dev_write", lambda: open("/dev/planted", "w").close())
# class 5: the toolchain folders show binaries, never credentials
T = json.loads(os.environ["ATTACK_TARGETS"])
for i, path in enumerate(T["secrets"]):
    attempt(f"secret{i}", lambda p=path: open(p).read())
attempt("tool_binary", lambda: open(T["tool_binary"]).read())
pathlib.Path("seen.json").write_text(json.dumps(seen))
'''


@pytest.mark.system
def test_as_root_the_sandbox_s_user_is_an_unprivileged_host_id_and_no_kernel_setting_is_writable(
    unit, tmp_path, monkeypatch
):
    """Issue 43, classes 0 and 5, from inside a confined run: host-wide sysctls fail the permission check, the
    sandbox's own hostname is refused, the host id behind it is not root; the work tree is writable yet stays the
    host user's on disk (host git works in it unchanged); a home's credentials are not among the toolchain's files."""
    project, wt = unit
    home = tmp_path / "home"
    secrets = {
        ".cargo/credentials.toml": "[registry]\ntoken = 'cio-secret'\n", ".cargo/config.toml": "[http]\n",
        ".npmrc": "//registry/:_authToken=npm-secret\n", ".config/gh/hosts.yml": "oauth_token: gho-secret\n",
        ".local/share/keyrings/login.keyring": "secret\n", ".docker/config.json": '{"auths": {}}\n',
        ".config/tool/creds.json": "secret\n",
    }  # fmt: skip
    for rel, text in secrets.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    for folder in (home / ".cargo" / "bin", home / ".config" / "tool" / "bin"):
        folder.mkdir(parents=True)
        (folder / "tool").write_text("#!/bin/sh\n")
        (folder / "tool").chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{home}/.cargo/bin:{home}/.config/tool/bin:{os.environ['PATH']}")
    targets = {"secrets": [str(home / rel) for rel in secrets], "tool_binary": str(home / ".cargo/bin/tool")}
    (wt.path / "tests" / "conftest.py").write_text(WALL)
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120, env={"ATTACK_TARGETS": json.dumps(targets)},
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    assert result.confinement == "bwrap" and result.ok, result.output_tail
    seen = json.loads((wt.path / "seen.json").read_text())
    assert not any(v for k, v in seen.items() if k.startswith("writable:")), seen
    assert "Read-only file system" in seen["hostname"] or "Permission" in seen["hostname"], seen["hostname"]
    if os.geteuid() == 0:
        mapped = [line.split() for line in seen["uid_map"] if line.strip()]
        assert ["65534", "0", "1"] not in mapped and all(m[1] != "0" for m in mapped if m[0] == "65534"), mapped
    assert seen["worktree_write"] == "done" and seen["worktree_chmod"] == "done"
    made = wt.path / "made-inside.txt"
    assert made.stat().st_uid == os.geteuid()  # the host user's on disk, whoever wrote it inside
    status = subprocess.run(["git", "status", "--porcelain"], cwd=wt.path, capture_output=True, text=True)
    assert status.returncode == 0 and "made-inside.txt" in status.stdout  # git's ownership check: unchanged
    assert "Read-only" in seen["dev_write"]
    assert all(seen[f"secret{i}"] != "done" and "secret" not in seen[f"secret{i}"] for i in range(len(secrets)))
    assert seen["tool_binary"] == "#!/bin/sh\n"  # the toolchain's binaries are there


SURFACES = r'''
import json, os, pathlib, time
seen = {}
def fill(path, mb):
    try:
        with open(path, "wb") as fh:
            for _ in range(mb):
                fh.write(b"\1" * 1024 * 1024)
                fh.flush()
        return "done"
    except OSError as exc:
        return type(exc).__name__ + ": " + str(exc.strerror)
    finally:
        pathlib.Path(path).unlink(missing_ok=True)
seen["shm"] = fill("/dev/shm/big", 40)
pathlib.Path("seen.json").write_text(json.dumps(seen))
with open("big.bin", "wb") as fh:  # past the work-tree quota: the run is stopped while it writes
    for _ in range(120):
        fh.write(b"\1" * 1024 * 1024)
        fh.flush()
        time.sleep(0.02)
pathlib.Path("wrote-it-all").write_text("yes")
'''


@pytest.mark.system
def test_dev_shm_is_sized_and_a_run_writing_past_the_work_tree_quota_is_stopped_as_resource_limit(unit):
    project, wt = unit
    update_settings(project, sandbox=SandboxSettings(shm_mb=16, worktree_mb=32).model_dump())
    (wt.path / "tests" / "conftest.py").write_text(SURFACES)
    result = run_tests(wt.path, ["tests"], framework="pytest", timeout=120,
                       confinement=for_workdir(wt.path, project.state_dir))  # fmt: skip
    seen = json.loads((wt.path / "seen.json").read_text())
    assert seen["shm"].startswith("OSError") and "space" in seen["shm"], seen
    assert result.confinement == "bwrap" and not result.ok and result.crashed
    assert "resource_limit: the run was stopped by the sandbox's worktree_mb limit" in result.output_tail
    assert not (wt.path / "wrote-it-all").exists() and (wt.path / "big.bin").stat().st_size < 120 * 1024 * 1024
