"""Workers are checked before they get work: a job carries the devloop's GraphLemon build, and a worker of another
build, or on a Python older than GraphLemon needs, refuses it before it touches anything, with words."""

from __future__ import annotations

import pytest

from graphlemon import __version__
from graphlemon.build import build_id, build_refusal, python_refusal
from graphlemon.devloop.remote_unit import FolderStore, RemoteUnitJob, run_remote_unit
from graphlemon.errors import ErrorCode, GraphLemonError


def test_the_build_is_the_version_and_a_digest_of_the_source():
    version, _, digest = build_id().partition("+")
    assert version == __version__ and len(digest) == 12 and int(digest, 16) >= 0


@pytest.mark.parametrize("version", [(3, 11, 0), (3, 11, 2), (3, 11, 3)])
def test_a_python_before_3_11_4_is_refused_with_words(version):
    said = python_refusal(version)
    assert said == f"this worker runs Python 3.11.{version[2]}; GraphLemon needs Python 3.11.4 or later (pyproject.toml)"
    assert python_refusal((3, 11, 4)) is None and python_refusal((3, 11, 7)) is None


def test_pyproject_allows_only_what_the_check_allows():
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert meta["project"]["requires-python"].startswith(">=3.11.4,")


def test_a_worker_of_another_build_refuses_the_job_before_touching_anything(tmp_path):
    other = f"{__version__}+000000000000"
    assert build_refusal(build_id()) is None
    assert build_refusal(other) == (f"this worker runs GraphLemon {build_id()}, the job was dispatched by GraphLemon "
                                    f"{other}: install the devloop's GraphLemon on the worker (the same commit), "
                                    "then resume")  # fmt: skip
    job = RemoteUnitJob(task_id="t", unit_id="add", loop_round=0, remote="file:///nowhere.git", build=other,
                        snapshot=f"graphlemon-snapshots/x-{'0' * 64}.tar.gz")  # fmt: skip
    scratch = tmp_path / "worker"
    scratch.mkdir()
    with pytest.raises(GraphLemonError) as err:
        run_remote_unit(job, FolderStore(tmp_path / "store"), scratch)
    assert err.value.code == ErrorCode.EXECUTOR_ERROR and other in err.value.message
    assert list(scratch.iterdir()) == [] and not (tmp_path / "store").exists()  # nothing cloned, nothing read
    unnamed = job.model_copy(update={"build": None})
    with pytest.raises(GraphLemonError, match="names no build"):
        run_remote_unit(unnamed, FolderStore(tmp_path / "store"), scratch)
