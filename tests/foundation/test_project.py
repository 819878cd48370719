"""Project init (REQ-11): git repo, non-git confirmed / declined, idempotent, missing folder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.project import STATE_DIR, init_project, open_project


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under folder with a hash of its bytes (dirs too)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            out[os.path.relpath(os.path.join(root, name), folder)] = "dir"
        for name in files:
            p = Path(root, name)
            out[os.path.relpath(p, folder)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_init_in_a_git_repo_creates_state_and_excludes_it(git_repo: Path):
    result = init_project(git_repo)
    assert result.created and not result.git_initialised
    meta = json.loads((git_repo / STATE_DIR / "project.json").read_text())
    assert meta["project_id"] == result.project.project_id and meta["target_path"] == str(git_repo)
    assert "/.graphlemon/" in (git_repo / ".git" / "info" / "exclude").read_text().splitlines()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=git_repo, capture_output=True, text=True).stdout
    assert status == ""  # the loop's own state is never committed


def test_init_is_idempotent(git_repo: Path):
    first = init_project(git_repo)
    second = init_project(git_repo)
    assert not second.created
    assert second.project.project_id == first.project.project_id
    exclude = (git_repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/.graphlemon/") == 1


def test_non_git_folder_confirmed_runs_git_init(tmp_path: Path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("hi")
    questions = []
    result = init_project(folder, confirm_git_init=lambda q: questions.append(q) or True)
    assert result.git_initialised and result.created
    assert (folder / ".git").is_dir() and (folder / STATE_DIR / "project.json").is_file()
    assert "not a git repository" in questions[0]


@pytest.mark.parametrize("confirm", [None, lambda q: False])
def test_non_git_folder_declined_writes_nothing(tmp_path: Path, confirm):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("hi")
    (folder / "sub").mkdir()
    before = snapshot(folder)
    with pytest.raises(GraphLemonError) as info:
        init_project(folder, confirm_git_init=confirm)
    assert info.value.code == ErrorCode.ABORTED
    assert snapshot(folder) == before


@pytest.mark.parametrize("path", ["does-not-exist", "a-file"])
def test_missing_folder_is_project_not_found(tmp_path: Path, path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(GraphLemonError) as info:
        init_project(tmp_path / path)
    assert info.value.code == ErrorCode.PROJECT_NOT_FOUND


def test_empty_path_is_invalid_param():
    with pytest.raises(GraphLemonError) as info:
        init_project("  ")
    assert info.value.code == ErrorCode.INVALID_PARAM


def test_subfolder_of_a_repo_is_refused_with_the_top_level_named(git_repo: Path):
    (git_repo / "pkg").mkdir()
    with pytest.raises(GraphLemonError) as info:
        init_project(git_repo / "pkg")
    assert info.value.code == ErrorCode.INVALID_PARAM and str(git_repo) in info.value.message
    assert not (git_repo / "pkg" / STATE_DIR).exists()


def test_open_project_walks_up_from_cwd(git_repo: Path, monkeypatch):
    pid = init_project(git_repo).project.project_id
    (git_repo / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(git_repo / "a" / "b")
    assert open_project().project_id == pid
    assert open_project(git_repo).root == git_repo


def test_open_uninitialised_folder_is_project_not_found(git_repo: Path, monkeypatch, tmp_path):
    with pytest.raises(GraphLemonError) as info:
        open_project(git_repo)
    assert info.value.code == ErrorCode.PROJECT_NOT_FOUND and "graphlemon init" in info.value.message
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GraphLemonError):
        open_project()


def test_corrupt_project_json_is_ledger_corrupt(git_repo: Path):
    init_project(git_repo)
    (git_repo / STATE_DIR / "project.json").write_text("{broken")
    with pytest.raises(GraphLemonError) as info:
        open_project(git_repo)
    assert info.value.code == ErrorCode.LEDGER_CORRUPT


@pytest.mark.system
def test_concurrent_inits_create_one_project(git_repo: Path):
    import sys

    code = (
        "import sys; from graphlemon.project import init_project; print(init_project(sys.argv[1]).project.project_id)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(git_repo)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1
