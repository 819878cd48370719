"""Issue 20: agent-written tests run confined (bubblewrap): a conftest cannot reach outside the work tree.

Real bwrap, real pytest, a real git work tree. Skipped only where bwrap cannot
run (it is installed by `make test`; the kernel must allow user namespaces).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.testrun import run_tests
from graphlemon.testrun.confine import Confinement, bwrap_args, bwrap_available, for_workdir  # noqa: F401 - read by the skipif string condition

# a string condition: probed when a marked (system) test is set up, not at this module's import (the probe starts
# bwrap and loads libseccomp, whose lookup runs `ldconfig -p`: nothing the unit tier here may start)
needs_bwrap = pytest.mark.skipif("bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)")

HOSTILE_CONFTEST = """
import json, os, socket, pathlib

seen = {}
def attempt(name, fn):
    try:
        fn()
        seen[name] = "done"
    except Exception as exc:
        seen[name] = type(exc).__name__

attempt("outside", lambda: pathlib.Path(os.environ["TARGET_OUTSIDE"]).write_text("pwned"))
attempt("ledger", lambda: open(os.environ["TARGET_LEDGER"], "a").write('{"kind": "evil"}\\n'))
attempt("home", lambda: pathlib.Path(os.environ["HOME"], "pwned").write_text("pwned"))
attempt("tmp", lambda: pathlib.Path("/tmp/graphlemon-confine-probe").write_text("pwned"))
attempt("net", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
seen["ledger_visible"] = os.path.exists(os.environ["TARGET_LEDGER"])
seen["home_listing"] = sorted(os.listdir(os.environ["HOME"]))
pathlib.Path("seen.json").write_text(json.dumps(seen))
"""


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """A worktree under the project's .graphlemon/ (as the loop makes them) with a conftest that tries to escape."""
    repo = tmp_path / "repo"
    state = repo / ".graphlemon"
    work = state / "worktrees" / "task-1" / "u1"
    (work / "tests").mkdir(parents=True)
    (state / "timeline.ndjson").write_text('{"kind": "ok"}\n')
    (work / "tests" / "conftest.py").write_text(HOSTILE_CONFTEST)
    (work / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("secret")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TARGET_OUTSIDE", str(outside / "pwned.txt"))
    monkeypatch.setenv("TARGET_LEDGER", str(state / "timeline.ndjson"))
    return work, state, outside, home


@pytest.mark.system
@needs_bwrap
def test_a_conftest_cannot_write_outside_the_work_tree_nor_see_the_ledger_or_home(hostile):
    work, state, outside, home = hostile
    targets = {"TARGET_OUTSIDE": os.environ["TARGET_OUTSIDE"], "TARGET_LEDGER": os.environ["TARGET_LEDGER"]}
    result = run_tests(
        work, ["tests"], framework="pytest", timeout=120, env=targets, confinement=for_workdir(work, state)
    )
    assert result.ok, result.output_tail
    assert result.confinement == "bwrap"
    seen = json.loads((work / "seen.json").read_text())  # the work tree stays writable
    assert seen["outside"] != "done" and not list(outside.iterdir())
    assert seen["ledger"] != "done" and not seen["ledger_visible"]
    assert (state / "timeline.ndjson").read_text() == '{"kind": "ok"}\n'
    assert ".ssh" not in seen["home_listing"] and not (home / "pwned").exists()  # home: empty and private
    assert seen["tmp"] == "done" and not Path("/tmp/graphlemon-confine-probe").exists()  # a private /tmp
    assert seen["net"] != "done"


@pytest.mark.system
def test_unconfined_runs_say_so_in_the_result(hostile):
    work, _state, outside, _home = hostile
    (work / "tests" / "conftest.py").write_text("")
    result = run_tests(work, ["tests"], framework="pytest", timeout=120)
    assert result.ok and result.confinement == "none"


@pytest.mark.system
def test_required_confinement_refuses_when_bwrap_cannot_run(hostile, monkeypatch, tmp_path):
    from graphlemon.testrun import confine

    work, state, _outside, _home = hostile
    monkeypatch.setattr(confine, "_probe", confine._Probe())  # forget the cached probe: PATH changes below
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}{Path(sys.executable).parent}")
    with pytest.raises(GraphLemonError) as err:
        run_tests(
            work, ["tests"], framework="pytest", timeout=60, confinement=for_workdir(work, state, mode="required")
        )
    assert err.value.code == ErrorCode.TEST_RUNNER_ERROR and "bwrap" in err.value.message
    assert "apt-get install bubblewrap" in err.value.message and "GRAPHLEMON_TEST_CONFINEMENT=off" in err.value.message
    assert not (work / "seen.json").exists()  # nothing ran
    monkeypatch.delenv("GRAPHLEMON_TEST_CONFINEMENT", raising=False)
    with pytest.raises(GraphLemonError):  # required is the default
        run_tests(work, ["tests"], framework="pytest", timeout=60, confinement=for_workdir(work, state))
    assert not (work / "seen.json").exists()
    (work / "tests" / "conftest.py").write_text("")  # what follows runs unconfined
    monkeypatch.setenv("GRAPHLEMON_TEST_CONFINEMENT", "auto")  # the explicit opt-out
    result = run_tests(work, ["tests"], framework="pytest", timeout=120, confinement=for_workdir(work, state))
    assert result.confinement == "none"  # auto: runs, loudly, and records it


def test_the_setting_is_validated(hostile, monkeypatch):
    work, state, *_ = hostile
    monkeypatch.setenv("GRAPHLEMON_TEST_CONFINEMENT", "sometimes")
    with pytest.raises(GraphLemonError) as err:
        run_tests(work, ["tests"], framework="pytest", timeout=60, confinement=for_workdir(work, state))
    assert err.value.code == ErrorCode.INVALID_PARAM


@pytest.mark.system  # bwrap_args maps the sandbox's ids through a keeper process (idmap_keeper)
def test_mounts_come_parent_first_so_the_work_tree_inside_a_hidden_folder_stays_visible(tmp_path):
    state = tmp_path / "repo" / ".graphlemon"
    work = state / "worktrees" / "t" / "u"
    work.mkdir(parents=True)
    args = bwrap_args(Confinement(workdir=work, hidden=(state,)), cwd=work, environ={"HOME": str(tmp_path / "h")})
    assert args.index(str(state)) < args.index(str(work))
    assert "--unshare-net" in args and args[args.index("--bind") + 2] == str(work)  # as root the source is idmapped


@pytest.mark.system  # bwrap_args maps the sandbox's ids through a keeper process (idmap_keeper)
def test_of_a_repository_under_home_only_its_dependencies_are_shown_never_its_work_tree(tmp_path):
    """Issue 43 (sbxred c21, c34): the person's work tree (an ignored `.env`, a local database) is never shown to a
    run; only its installed dependencies (node_modules, a virtualenv) are, read-only, and its ledger stays hidden."""
    home = tmp_path / "home"
    repo = home / "code" / "repo"
    state = repo / ".graphlemon"
    work = state / "worktrees" / "t" / "u"
    work.mkdir(parents=True)
    (repo / ".env").write_text("DB_PASSWORD=x\n")
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / ".npmrc").write_text("//r/:_authToken=x\n")
    (repo / "venv").symlink_to(home)  # a link named like a dependency folder is not followed
    args = bwrap_args(for_workdir(work, state), cwd=work, environ={"HOME": str(home), "PATH": "/usr/bin"})
    assert str(repo) not in args and str(repo / ".env") not in args and str(repo / "venv") not in args
    modules = args.index(str(repo / "node_modules"))
    assert args[modules - 1] == "--ro-bind" and args[modules + 1] == str(repo / "node_modules")
    assert args[args.index(str(repo / "node_modules" / ".npmrc")) - 1] == "/dev/null"  # covered
    order = [args.index(str(p)) for p in (repo / "node_modules", state, work)]
    assert order == sorted(order)
    assert args[args.index(str(state)) - 1] == "--tmpfs"


@pytest.mark.system
def test_a_run_s_pids_group_waits_for_its_launcher_while_other_runs_start(monkeypatch):
    """Runs start side by side (units, claude turns and their tests): a group handed out is not swept before its
    launcher joins it; once its processes have ended (or its launcher never came), a later sweep removes it."""
    from graphlemon.testrun import cgroups

    first = cgroups.new_group(16)
    if first is None:
        pytest.skip("no pids cgroup can be made here (root with a pids controller only)")
    others = [cgroups.new_group(16) for _ in range(3)]  # each sweeps the empty groups
    assert first.is_dir() and all(g is not None and g.is_dir() for g in others)
    subprocess.run(["/bin/sh", "-c", f"echo $$ > {first}/cgroup.procs && true"], check=True)  # joins, then ends
    monkeypatch.setattr(cgroups, "JOIN_GRACE_S", 0.0)
    cgroups.new_group(16)
    assert not first.exists() and not any(g.exists() for g in others)


def test_a_program_s_install_dirs_follow_its_links(tmp_path):
    """`~/.local/bin/claude -> ~/.local/share/claude/versions/1.0` shows both folders; a link into a `bin` folder
    shows its whole prefix (`/opt/node/bin/node`: `/opt/node`)."""
    from graphlemon.testrun.confine import program_dirs

    versions = tmp_path / "share" / "claude" / "versions"
    versions.mkdir(parents=True)
    (versions / "1.0").write_text("#!/bin/sh\n")
    (versions / "1.0").chmod(0o755)
    found = tmp_path / "local-bin"
    found.mkdir()
    (found / "claude").symlink_to(versions / "1.0")
    assert program_dirs(str(found / "claude")) == [found, versions]
    prefix = tmp_path / "opt" / "node"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "node").write_text("#!/bin/sh\n")
    (prefix / "bin" / "node").chmod(0o755)
    (found / "node").symlink_to(prefix / "bin" / "node")
    assert program_dirs(str(found / "node")) == [found, prefix]
    assert program_dirs("no-such-program-here") == []


def test_toolchains_are_shown_by_allow_list_never_a_home_s_folder_whole(tmp_path):
    """Issue 43, class 5: a PATH entry shows itself, a toolchain home only what builds read, a secret store nothing,
    and a credential-named entry inside a shown folder is covered."""
    from graphlemon.testrun.toolchain_mounts import tool_mounts

    home = tmp_path / "home"
    for rel in (".cargo/bin/cargo", ".cargo/registry/index/x", ".cargo/credentials.toml", ".cargo/config.toml",
                ".config/gh/hosts.yml", ".config/tool/bin/tool", ".local/bin/claude", ".local/share/keyrings/k",
                "go/pkg/mod/m", "go/.netrc", "bin/mine", "bin/.npmrc"):  # fmt: skip
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x")
    path = ":".join(str(home / p) for p in (".cargo/bin", ".config/tool/bin", ".local/bin", "bin", "")) + ":/usr/bin"  # "": the home
    shown, covered = tool_mounts(home, {"PATH": path})
    under = {str(p.relative_to(home)) for p in shown if home in p.parents}
    assert under == {".cargo/bin", ".cargo/registry/index", ".local/bin", "bin", "go/pkg/mod"}, under  # what exists
    assert covered == [home / "bin" / ".npmrc"]  # behind the allow-list, a credential-named entry is covered
    assert not any(p in shown for p in (home, home / ".cargo", home / ".config", home / ".local", home / "go"))


def test_an_install_prefix_under_the_home_is_shown_as_its_install_parts_only(tmp_path):
    """Issue 43, class 5 (sbxred c22-c24): what a PATH link points into, GOROOT, VIRTUAL_ENV, JAVA_HOME and each
    version of pyenv / nvm under the home are shown as their install parts (bin, lib, src, ...), never a `pip.conf`,
    an `etc/npmrc`, a `misc/` or a `secrets/` beside them; Go's VCS clones and a hidden token file are covered; a
    variable naming the home itself shows nothing."""
    from graphlemon.testrun.toolchain_mounts import tool_mounts

    home = tmp_path / "home"
    files = ("apps/tool/bin/tool", "apps/tool/secrets/token.txt", "sdk/go/bin/go", "sdk/go/src/fmt/x.go",
             "sdk/go/misc/deploy.txt", "venvs/p/bin/python", "venvs/p/pyvenv.cfg", "venvs/p/pip.conf",
             ".pyenv/versions/3.11/bin/python", ".pyenv/versions/3.11/pip.conf", ".nvm/versions/node/v20/bin/node",
             ".nvm/versions/node/v20/etc/npmrc", "go/pkg/mod/cache/vcs/0a/config", "go/pkg/mod/x@v1/x.go",
             ".cargo/registry/index/corp/.cargo-index-token", ".cargo/git/db/x/config", ".cargo/git/checkouts/x/a.rs")  # fmt: skip
    for rel in files:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x")
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "tool").symlink_to(home / "apps/tool/bin/tool")
    (home / ".pyenv" / "shims").mkdir()
    path = f"{home}/.local/bin:{home}/.pyenv/shims:{home}/.nvm/versions/node/v20/bin:/usr/bin"
    env = {"PATH": path, "GOROOT": str(home / "sdk/go"), "VIRTUAL_ENV": str(home / "venvs/p"),
           "JAVA_HOME": str(home)}  # fmt: skip
    shown, covered = tool_mounts(home, env)
    under = {str(p.relative_to(home)) for p in shown if home in p.parents}
    assert under == {
        ".local/bin", "apps/tool", "sdk/go", "venvs/p", ".pyenv/shims", ".pyenv/versions", ".nvm/versions",
        "go/pkg/mod", ".cargo/registry/index", ".cargo/git/checkouts",
    }, under  # fmt: skip
    assert {str(p.relative_to(home)) for p in covered} == {
        "apps/tool/secrets", "sdk/go/misc", "venvs/p/pip.conf", ".pyenv/versions/3.11/pip.conf",
        ".nvm/versions/node/v20/etc", "go/pkg/mod/cache/vcs", ".cargo/registry/index/corp/.cargo-index-token",
    }  # fmt: skip  (a prefix is one mount, what lies beside its install parts is covered)
