"""What `graphlemon serve` runs: the console (uvicorn) and, optionally, a Prefect worker as a child process.

GET /healthz answers `{"status": "ok", "commit", "pid", "code_dir", "worker"}`; status `degraded` (HTTP 503)
when the worker was asked for and has exited. The worker is a real `prefect worker start --pool <pool>` with
GRAPHLEMON_PROJECT set and this copy of the code first on PYTHONPATH (it needs a Prefect server: PREFECT_API_URL).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .. import gitrun


class Service:
    def __init__(self, *, code_dir: Path, project: Path, commit: str | None, worker: bool, pool: str) -> None:
        self.code_dir, self.project, self.pool = code_dir, project, pool
        self.commit = commit or _head(code_dir)
        self.want_worker = worker
        self.worker: subprocess.Popen | None = None

    def health(self) -> dict:
        worker = "off"
        if self.want_worker:
            worker = "running" if self.worker is not None and self.worker.poll() is None else "exited"
        return {"status": "degraded" if worker == "exited" else "ok", "commit": self.commit,
                "code_dir": str(self.code_dir), "worker": worker}  # fmt: skip

    def start_worker(self) -> None:
        env = {**os.environ, "GRAPHLEMON_PROJECT": str(self.project), "PYTHONPATH": str(self.code_dir)}
        self.worker = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", self.pool],
                                       cwd=self.code_dir, env=env)  # fmt: skip (in serve's process group)

    def run(self, serve: Callable[[Callable[[], dict]], None]) -> None:
        """Run `serve` (the console, given what its /healthz reports) until it returns, the worker beside it."""
        if self.want_worker:
            self.start_worker()
        try:
            serve(self.health)
        finally:
            if self.worker is not None and self.worker.poll() is None:
                self.worker.terminate()
                try:
                    self.worker.wait(10)
                except subprocess.TimeoutExpired:
                    self.worker.kill()


def _head(code_dir: Path) -> str:
    proc = gitrun.text(code_dir, "rev-parse", "HEAD")
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"
