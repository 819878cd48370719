"""Code through a git remote: what the project names is checked, an unusable remote is a clear error, and no
program of the remote's or the repository's choosing runs on a push or fetch."""

from __future__ import annotations

import os
import subprocess

import pytest
from scale_kit import CALC, git, make_project

from graphlemon import gitrun
from graphlemon.devloop import remote_git
from graphlemon.devloop.remote_unit import FolderStore, dispatch, remote_of, run_remote_unit, take_in
from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.project import update_settings
from graphlemon.stages.session import LoopSession
from graphlemon.taskboard import TaskBoard


@pytest.mark.parametrize(
    "url",
    ["", "   ", "not a url", "/srv/git/app.git", "ftp://host/app.git", "ext::sh -c touch% /tmp/x", "-uploadpack=sh",
     "file://relative/app.git", "file://otherhost/srv/app.git", "https:///app.git", "ssh://[::1/app.git",
     "file:///srv/app.git\nmore", "x" * 3000, 42, None],
)  # fmt: skip
def test_a_remote_that_is_not_a_url_git_can_fetch_is_invalid_param(url):
    with pytest.raises(GraphLemonError) as err:
        remote_git.check_remote_url(url)
    assert err.value.code == ErrorCode.INVALID_PARAM


@pytest.mark.parametrize("url", ["file:///srv/git/app.git", "git://127.0.0.1/app.git", "ssh://git@host/app.git",
                                 "https://host.example/org/app.git"])  # fmt: skip
def test_urls_git_fetches_are_accepted(url):
    assert remote_git.check_remote_url(url) == url


def test_a_token_in_the_url_never_shows_in_a_message():
    assert remote_git.shown("https://bot:s3cret@host.example/app.git") == "https://***@host.example/app.git"
    with pytest.raises(GraphLemonError) as err:
        remote_git.probe("https://bot:s3cret@127.0.0.1:9/app.git")
    assert err.value.code == ErrorCode.GIT_ERROR and "s3cret" not in err.value.message


def test_an_unreachable_remote_is_git_error_naming_it(tmp_path):
    url = (tmp_path / "nowhere.git").as_uri()
    with pytest.raises(GraphLemonError) as err:
        remote_git.probe(url)
    assert err.value.code == ErrorCode.GIT_ERROR and "nowhere.git" in err.value.message


@pytest.mark.skipif(os.geteuid() != 0, reason="a repository owned by another user needs root to make")
def test_a_file_remote_of_another_owner_is_served_when_the_person_trusts_it_in_safe_directory(tmp_path, monkeypatch):
    shared = tmp_path / "it's shared.git"  # a quote in the path: the serving command is run by a shell
    subprocess.run(["git", "init", "-q", "--bare", str(shared)], check=True)
    for folder, _, files in os.walk(shared):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, 65534, 65534)  # nobody
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    with pytest.raises(GraphLemonError) as err:
        remote_git.probe(shared.as_uri())
    assert err.value.code == ErrorCode.GIT_ERROR and "dubious ownership" in err.value.message
    subprocess.run(["git", "config", "--global", "--add", "safe.directory", str(shared)], check=True)
    gitrun.safe_directories.cache_clear()  # read once per process: this test changes it
    try:
        remote_git.probe(shared.as_uri())  # the person's global safe.directory reaches the serving side
    finally:
        gitrun.safe_directories.cache_clear()


def test_dispatch_with_an_unreachable_or_missing_remote_writes_nothing(tmp_path):
    handle = make_project(tmp_path / "calc", remote=False)
    task = TaskBoard(handle.ledger).create("calc")
    session = LoopSession.start(handle, task.task_id)
    store = FolderStore(tmp_path / "store")
    with pytest.raises(GraphLemonError) as err:
        remote_of(handle)
    assert err.value.code == ErrorCode.INVALID_PARAM
    update_settings(handle, git_remote=(tmp_path / "gone.git").as_uri())
    with pytest.raises(GraphLemonError) as err:
        dispatch(session, "add", 0, None, "", store, sharing=1)
    assert err.value.code == ErrorCode.GIT_ERROR and "gone.git" in err.value.message
    assert not (tmp_path / "store").exists()


def test_no_hook_of_the_remote_runs_on_a_push_or_fetch(tmp_path):
    handle = make_project(tmp_path / "calc")
    bare = tmp_path / "calc.git"
    witness = tmp_path / "hook-ran"
    for hook in ("pre-receive", "update", "post-receive", "post-update", "reference-transaction"):
        script = bare / "hooks" / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> {witness}\n")
        script.chmod(0o755)
    git(handle.root, "branch", "graphlemon/t/integration")
    remote_git.publish(handle.root, remote_of(handle), ["graphlemon/t/integration"])
    remote_git.clone_task(remote_of(handle), tmp_path / "clone", "t", "refs/heads/graphlemon/t/integration")
    assert git(tmp_path / "clone", "rev-parse", "HEAD") == git(handle.root, "rev-parse", "HEAD")
    assert not witness.exists()


@pytest.mark.system
def test_a_remote_kept_in_a_block_never_travels_in_the_job(tmp_path, prefect_harness):
    from graphlemon.blocks.git_remote import GitRemote, resolve_remote

    handle = make_project(tmp_path / "calc")
    url = remote_of(handle)
    GitRemote(url=url).save("calc-remote-test", overwrite=True)
    update_settings(handle, git_remote="block:calc-remote-test")
    task = TaskBoard(handle.ledger).create("calc")
    session = LoopSession.start(handle, task.task_id, executor="scripted", playbook=CALC / "playbook.yaml")
    store = FolderStore(tmp_path / "store")
    with session.bound():
        Stages(session.run).plan(0, None)
        job = dispatch(session, "add", 0, None, "", store, 1, resolve_remote)
    assert job.remote == "block:calc-remote-test" and url not in job.model_dump_json()
    result = run_remote_unit(job, store, tmp_path / "worker", resolve=resolve_remote)
    with session.bound():
        assert take_in(session, job, result, resolve_remote).green
    with pytest.raises(GraphLemonError) as err:
        resolve_remote("block:no-such-remote-block")
    assert err.value.code == ErrorCode.INVALID_PARAM
