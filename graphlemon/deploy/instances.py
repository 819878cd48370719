"""An instance: one commit of GraphLemon checked out in `instances/<commit>/` (a git worktree of GraphLemon's
repository) and served by `graphlemon serve` on its own port.

The instance runs with the base interpreter (the venv the supervisor runs in: GraphLemon's dependencies) and
`PYTHONPATH=<instance dir>`, from inside that dir, so `graphlemon`, `flows` and `tasks` are imported from the
instance's own checkout, ahead of the base install. Staging is a `git worktree add` (about a second) instead of a
venv and a `pip install` per commit (minutes). The price: a commit that changes GraphLemon's *dependencies* runs
against the base venv's versions (docs/deploy.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from pydantic import BaseModel

from .. import gitrun
from ..errors import ErrorCode, GraphLemonError
from .haproxy import pid_alive, stop_group
from .health_signals import HealthReading

GIT_ID = ["-c", "user.name=GraphLemon deploy supervisor", "-c", "user.email=deploy@graphlemon.local"]


class Instance(BaseModel):
    commit: str
    dir: str
    port: int
    pid: int
    log: str


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = gitrun.text(repo, *GIT_ID, *args)
    if check and proc.returncode != 0:
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {' '.join(args)}: {proc.stderr.strip()}", repo=str(repo))
    return proc


def resolve_commit(repo: Path, ref: str) -> str:
    proc = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{ref!r} is not a commit of {repo}")
    return proc.stdout.strip()


def code_tree(repo: Path, commit: str, paths: tuple[str, ...]) -> str:
    """One key for the trees of `paths` at `commit` (equal keys: the same code)."""
    import hashlib

    trees = [git(repo, "rev-parse", f"{commit}:{p}", check=False).stdout.strip() or "-" for p in paths]
    return hashlib.sha1(" ".join(trees).encode()).hexdigest()


def checkout(repo: Path, instances: Path, commit: str) -> Path:
    """`instances/<commit>/`: a detached worktree of `commit` (made anew if a damaged one is in the way)."""
    target = instances / commit
    if target.exists() and git(target, "rev-parse", "HEAD", check=False).stdout.strip() == commit:
        return target
    git(repo, "worktree", "remove", "--force", str(target), check=False)
    git(repo, "worktree", "prune")
    if target.exists():
        raise GraphLemonError(ErrorCode.IO_ERROR, f"{target} exists and is not a worktree of {commit[:12]}")
    instances.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "--detach", str(target), commit)
    return target


def instance_env(instance_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = str(instance_dir)  # the instance's own code first (not the base venv's editable install)
    env.pop("PYTHONSTARTUP", None)
    return env


def start(instance_dir: Path, commit: str, port: int, project: Path, *, worker: bool = False,
          env: dict[str, str] | None = None) -> Instance:  # fmt: skip
    """Start `graphlemon serve` from the instance's checkout (it is not waited for: see `wait_healthy`)."""
    if not (instance_dir / "graphlemon" / "__init__.py").is_file():
        raise GraphLemonError(ErrorCode.IO_ERROR, f"{instance_dir} holds no GraphLemon checkout")
    log = instance_dir.parent / f"{instance_dir.name}.{port}.log"
    args = [sys.executable, "-m", "graphlemon", "serve", "--project", str(project), "--port", str(port),
            "--commit", commit, "--worker" if worker else "--no-worker"]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, cwd=instance_dir, env=instance_env(instance_dir, env), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    return Instance(commit=commit, dir=str(instance_dir), port=port, pid=proc.pid, log=str(log))


def read_health(port: int, timeout: float = 2) -> HealthReading:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout) as resp:
            body = json.loads(resp.read() or b"{}")
            return HealthReading(status=resp.status, commit=body.get("commit"), pid=body.get("pid"))
    except urllib.error.HTTPError as exc:
        return HealthReading(status=exc.code, error=str(exc))
    except (OSError, ValueError) as exc:
        return HealthReading(error=str(exc))


def wait_healthy(instance: Instance, timeout: float) -> HealthReading:
    """Poll /healthz until it answers 200 (or the process dies, or `timeout`): the last reading. An answer of 5xx
    is definite — the server is up and says it is not healthy (`degraded`: its worker exited) — and is returned at
    once rather than waited out."""
    deadline = time.monotonic() + timeout
    reading = HealthReading(error="not polled")
    while time.monotonic() < deadline:
        reading = read_health(instance.port)
        if reading.status == 200 or (reading.status is not None and reading.status >= 500):
            return reading
        if not pid_alive(instance.pid):
            tail = Path(instance.log).read_text(errors="replace")[-600:] if Path(instance.log).exists() else ""
            return HealthReading(error=f"process {instance.pid} exited: {tail.strip()}")
        time.sleep(0.1)
    return reading


def stop(instance: Instance) -> None:
    stop_group(instance.pid)
