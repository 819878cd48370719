"""The `claude` process runs inside the sandbox, so every command its Bash tool runs is confined.

The fake `claude` (tests/fakes/fake_claude.py) runs each scripted Bash command for real with `sh -c`, inside the
same bubblewrap sandbox as test runs: these are attacks an agent's Bash would try, and what the sandbox answers.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import uuid
from pathlib import Path

import pytest
from fakes.claude import bash, success

from graphlemon.agents import build_executor, check_executor
from graphlemon.agents.claude_code import ClaudeCodeExecutor, claude_config_paths
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.testrun.confine import bwrap_available

from .test_agents_claude_git_guard import bash_results

pytestmark = pytest.mark.skipif(bwrap_available()[0] is None, reason=f"no working bwrap: {bwrap_available()[1]}")


@pytest.fixture(autouse=True)
def confined(monkeypatch):
    """These attacks are real: they never run unconfined, whatever the environment says."""
    monkeypatch.setenv("GRAPHLEMON_TEST_CONFINEMENT", "required")


def _turn(turn, claude_settings, role="tester"):
    return turn(build_executor("claude_code", settings=claude_settings), role, node_exec_id="ne-confined")


@pytest.mark.system
def test_claude_s_bash_is_unprivileged_even_when_graphlemon_is_root(project, fake_claude, claude_settings, turn):
    fake_claude.queue(bash("id -u", "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status"))
    result = _turn(turn, claude_settings)
    (_, uid), (_, status) = bash_results(result)
    assert uid.strip() == "65534"
    fields = dict(line.split(":\t") for line in status.strip().splitlines())
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapBnd"], 16) == 0
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2"


@pytest.mark.system
def test_claude_s_bash_cannot_write_outside_the_work_tree(project, fake_claude, claude_settings, turn, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("host\n")
    name = f"graphlemon-planted-{uuid.uuid4().hex[:8]}"
    host_paths = [Path(p, name) for p in ("/etc", "/usr/local", "/", "/var/tmp")]
    attempts = (
        f"echo pwned > {outside}/kept.txt", f"echo pwned > {outside}/new.txt",
        f"echo pwned > /proc/self/root{outside}/new.txt", f"echo pwned > {project.state_dir}/planted.json",
        *(f"touch {p}" for p in host_paths[:3]), f"mount -t tmpfs none {outside}",
        "echo pwned > .git/hooks/post-commit", "ln -s /etc .git/planted",
    )  # fmt: skip
    fake_claude.queue(bash(*attempts, f"echo pwned > {host_paths[3]} && cat /tmp/{name}"))
    try:
        result = _turn(turn, claude_settings)
        outcomes = bash_results(result)
        for command, (failed, output) in zip(attempts, outcomes, strict=False):
            assert failed, f"{command!r} succeeded inside the sandbox: {output}"
        assert outcomes[-1] == (False, "pwned\n")  # a private /tmp: writable inside, gone after
        assert (outside / "kept.txt").read_text() == "host\n" and sorted(os.listdir(outside)) == ["kept.txt"]
        assert not (project.state_dir / "planted.json").exists() and not os.path.ismount(outside)
        assert not (project.root / ".git/hooks/post-commit").exists() and not (project.root / ".git/planted").exists()
        assert not any(os.path.lexists(p) for p in host_paths)
    finally:
        for path in host_paths:
            path.unlink(missing_ok=True)


@pytest.mark.system
def test_claude_s_bash_cannot_reach_a_host_unix_socket(project, fake_claude, claude_settings, turn, tmp_path):
    path = tmp_path / "sock" / "agent.sock"
    path.parent.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    server.settimeout(0.5)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    connect = 'python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])" {}'
    candidates = [str(path), *(p for p in ("/run/dbus/system_bus_socket", "/var/run/docker.sock") if os.path.exists(p))]
    try:
        fake_claude.queue(bash(*(connect.format(p) for p in candidates), "ls /run /var/run"))
        result = _turn(turn, claude_settings)
    finally:
        stop.set()
        thread.join(5)
        server.close()
    outcomes = bash_results(result)
    assert all(failed for failed, _ in outcomes), outcomes
    assert accepted == []


@pytest.mark.system
def test_claude_s_bash_sees_no_home_and_no_root_but_its_own_config_dir(
    project, fake_claude, claude_settings, turn, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE\n")
    (home / "notes.txt").write_text("mine\n")
    monkeypatch.setenv("HOME", str(home))
    fake_claude.queue(
        bash(
            f"cat {home}/.ssh/id_ed25519",
            f"cat {home}/notes.txt",
            "ls -A /root/.bashrc /root/.gitconfig",
            'echo session > "$CLAUDE_CONFIG_DIR/session.json"',
            "ls -A ~",
        )  # fmt: skip
    )
    result = _turn(turn, claude_settings)

    (ssh_failed, _), (notes_failed, _), (root_failed, _), (config_failed, _), (_, listing) = bash_results(result)
    assert ssh_failed and notes_failed and root_failed and not config_failed
    assert (fake_claude.config / "session.json").read_text() == "session\n"  # what claude keeps is kept
    assert "notes.txt" not in listing and ".ssh" not in listing  # a private, empty home


@pytest.mark.system
def test_claude_reaches_the_network_for_its_api(project, fake_claude, claude_settings, turn):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(60)
    port = server.getsockname()[1]
    got: list[bytes] = []

    def serve():
        try:
            conn, _ = server.accept()
            got.append(conn.recv(64))
            conn.close()
        except TimeoutError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    send = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})).sendall(b'api call')\""
    try:
        fake_claude.queue(bash(send))
        result = _turn(turn, claude_settings)
    finally:
        thread.join(60)
        server.close()
    assert bash_results(result) == [(False, "exit 0")] and got == [b"api call"]


@pytest.mark.system
def test_the_quota_probe_runs_confined_too(fake_claude, claude_settings):
    behaviour = bash('id -u > "$CLAUDE_CONFIG_DIR/probe-uid"')
    fake_claude.queue(behaviour)
    assert ClaudeCodeExecutor(claude_settings).probe("claude-sonnet-5-5")
    assert (fake_claude.config / "probe-uid").read_text() == "65534\n"


@pytest.mark.system
def test_without_a_sandbox_the_backend_is_refused_unless_the_person_opts_out(
    project, fake_claude, claude_settings, turn, tmp_path, monkeypatch
):
    from graphlemon.testrun import confine

    monkeypatch.setattr(confine, "_probe", confine._Probe())  # forget the cached probe: PATH changes below
    tools = tmp_path / "no-bwrap-bin"  # what the fake and the loop need, but no bwrap
    tools.mkdir()
    for name in ("git", "python3", "sh"):
        (tools / name).symlink_to(shutil.which(name, path="/usr/bin:/bin"))
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("GRAPHLEMON_TEST_CONFINEMENT", raising=False)
    fake_claude.queue(success(writes={"tests/test_x.py": "x = 1\n"}))

    with pytest.raises(GraphLemonError) as checked:
        check_executor("claude_code", settings=claude_settings)
    with pytest.raises(GraphLemonError) as refused:
        _turn(turn, claude_settings)
    for err in (checked.value, refused.value):
        assert err.code == ErrorCode.EXECUTOR_ERROR
        assert "bubblewrap (bwrap) is not installed" in err.message and "apt-get install bubblewrap" in err.message
        assert "GRAPHLEMON_TEST_CONFINEMENT=off" in err.message
    assert fake_claude.calls == [] and not (project.root / "tests/test_x.py").exists()  # nothing ran

    monkeypatch.setenv("GRAPHLEMON_TEST_CONFINEMENT", "off")  # the person's explicit choice
    assert _turn(turn, claude_settings).ok and (project.root / "tests/test_x.py").exists()


def test_the_config_dir_is_claude_s_own_choice(tmp_path):
    home = tmp_path / "home"
    assert claude_config_paths({"HOME": str(home)}) == [home / ".claude", home / ".claude.json"]
    assert (home / ".claude").is_dir()  # made, so what a confined turn writes there is kept
    named = tmp_path / "elsewhere"
    assert claude_config_paths({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(named)}) == [named]
    (tmp_path / "file").write_text("")
    with pytest.raises(GraphLemonError) as err:
        claude_config_paths({"CLAUDE_CONFIG_DIR": str(tmp_path / "file" / "sub")})
    assert err.value.code == ErrorCode.EXECUTOR_ERROR


@pytest.mark.system
def test_without_claude_config_dir_the_home_s_claude_folder_and_file_are_shown_writable(
    project, fake_claude, claude_settings, turn, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude").symlink_to(fake_claude.config)  # Claude Code's default config dir, wherever it really is
    (home / ".claude.json").write_text("{}")
    (home / "other.txt").write_text("mine\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    fake_claude.queue(bash("echo '{\"onboarded\": true}' > ~/.claude.json", "cat ~/other.txt"))
    result = _turn(turn, claude_settings)
    (json_failed, _), (other_failed, _) = bash_results(result)
    assert not json_failed and (home / ".claude.json").read_text() == '{"onboarded": true}\n'
    assert other_failed


@pytest.mark.system
def test_claude_s_bash_gets_claude_s_variables_and_no_other_secret(
    project, fake_claude, claude_settings, turn, monkeypatch
):
    monkeypatch.setenv("PGPASSWORD", "hunter2")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:hunter2@db/app")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_notreal")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    fake_claude.queue(bash("env"))
    [(failed, listing)] = bash_results(_turn(turn, claude_settings))
    names = {line.split("=", 1)[0] for line in listing.splitlines() if "=" in line}
    assert not failed and not {"PGPASSWORD", "DATABASE_URL", "GITHUB_TOKEN"} & names
    assert {"ANTHROPIC_BASE_URL", "HTTPS_PROXY", "CLAUDE_CONFIG_DIR", "PATH", "HOME"} <= names
