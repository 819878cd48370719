"""Prefect process workers that share no filesystem with the project: each runs inside bubblewrap, which mounts
only system folders, the Python installation and GraphLemon's (read-only), the folder of bare git remotes and
the result store; /tmp is empty and private, so no project folder of the tests is there. On the session's
Prefect server: the pool `graphlemon-remote`, the `remote-unit-loop` deployment on it, a local filesystem block
as the default result storage of the workers and of this process."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from prefect_stack import PREFECT, ROOT, PrefectStack, _started

POOL = "graphlemon-remote"
STORE_BLOCK = "graphlemon-results"
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc")


def python_home() -> Path:
    return Path(os.path.realpath(sys.executable)).parents[1]  # the interpreter the venv is made from


@dataclass
class RemoteStack:
    stack: PrefectStack
    remotes: Path  # bare repositories, one per project
    results: Path  # the local filesystem block's folder
    mounts: list[list[str]]  # each worker's bubblewrap arguments
    logs: list[Path]  # each worker's log
    procs: list  # each worker's process (the leader of its process group)

    @property
    def block_slug(self) -> str:
        return f"local-file-system/{STORE_BLOCK}"


def sandbox_args(remotes: Path, results: Path, n: int, hidden: tuple[Path, ...] = ()) -> list[str]:
    # a user namespace of its own, in which the worker is an ordinary user (uid 1000: as uid 0 GraphLemon would take
    # the root path of its test sandbox, graphlemon/testrun/root_identity.py, which a nested namespace cannot make):
    # the host's /proc is bound so that the tester's own sandbox can mount a proc inside, and the other processes'
    # roots and work folders in it stay closed
    args = ["bwrap", "--die-with-parent", "--unshare-user", "--uid", "1000", "--gid", "1000", "--dev", "/dev",
            "--bind", "/proc", "/proc", "--tmpfs", "/tmp"]  # fmt: skip
    for folder in SYSTEM:
        if Path(folder).exists():
            args += (
                ["--ro-bind", folder, folder]
                if not Path(folder).is_symlink()
                else ["--symlink", os.readlink(folder), folder]
            )
    for folder in (python_home(), ROOT):  # the interpreter, and GraphLemon with its .venv (an editable install)
        args += ["--ro-bind", str(folder), str(folder)]
    for folder in (remotes, results):
        args += ["--bind", str(folder), str(folder)]
    for folder in hidden:  # an empty folder in its place: an installed package the worker does not have
        args += ["--tmpfs", str(folder)]
    home = f"/tmp/worker-{n}"
    return args + ["--dir", home, "--setenv", "HOME", home, "--setenv", "PREFECT_HOME", f"{home}/prefect", "--setenv",
                   "PYTHONDONTWRITEBYTECODE", "1", "--chdir", "/tmp", "--"]  # fmt: skip


@contextmanager
def remote_workers(
    stack: PrefectStack,
    folder: Path,
    workers: int = 2,
    sandboxed: bool = True,
    pool: str = POOL,
    hidden: tuple[Path, ...] = (),
) -> Iterator[RemoteStack]:
    """The pool, the deployment (made from this repository) and `workers` process workers (one run each at a
    time; each in its bubblewrap sandbox unless the benchmark measures the bare path, with the `hidden` folders
    empty), the result block registered on the server."""
    from prefect.filesystems import LocalFileSystem

    remotes, results = folder / "remotes", folder / "results"
    remotes.mkdir(parents=True)
    results.mkdir(parents=True)
    with stack.client():
        LocalFileSystem(basepath=str(results)).save(STORE_BLOCK, overwrite=True)
    stack.cli("work-pool", "create", pool, "--type", "process", "--overwrite")
    stack.cli("--no-prompt", "deploy", "-n", "remote-unit-loop", "--pool", pool)
    env = {**stack.env, "PREFECT_DEFAULT_RESULT_STORAGE_BLOCK": f"local-file-system/{STORE_BLOCK}"}
    logs = [folder / f"remote-worker-{n}.log" for n in range(1, workers + 1)]
    mounts = [sandbox_args(remotes, results, n, hidden) if sandboxed else [] for n in range(1, workers + 1)]
    commands = [
        ([*mounts[n - 1], *PREFECT, "worker", "start", "--pool", pool, "--type", "process", "--name", f"remote-{n}",
          "--limit", "1"], logs[n - 1])
        for n in range(1, workers + 1)
    ]  # fmt: skip
    with _started(*commands, env=env) as procs:
        yield RemoteStack(stack, remotes, results, mounts, logs, procs)
    shutil.rmtree(results, ignore_errors=True)
