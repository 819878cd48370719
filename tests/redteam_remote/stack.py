"""remotered's stack (cases/README.md): one `prefect server start`, the `remote-unit-loop` deployment on a pool
`graphlemon-units`, a LocalFileSystem result store, a committed snake project with a bare remote, and up to two unit
workers inside bubblewrap (an empty /tmp but the remotes and the store). Written from the docs only. Every process
started here is in a session of its own and is stopped by its process group."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
BIN = Path(PY).parent
SNAKE = ROOT / "examples" / "snake"
STORE_SLUG = "local-file-system/graphlemon-results"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def killpg(proc: subprocess.Popen, sig=signal.SIGTERM, grace: float = 10) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


def sh(args, env, cwd=ROOT, timeout=300, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{args}: rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@dataclass
class Stack:
    base: Path
    url: str = ""
    env: dict = field(default_factory=dict)
    procs: dict = field(default_factory=dict)  # name -> Popen

    @property
    def proj(self) -> Path:
        return self.base / "snake"

    @property
    def store(self) -> Path:
        return self.base / "store"

    @property
    def remotes(self) -> Path:
        return self.base / "remotes"

    @property
    def playbook(self) -> Path:
        return self.base / "example" / "playbook.yaml"

    # --- setup -------------------------------------------------------------------------------------------------
    def start_server(self) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/api"
        home = self.base / "prefect-home"
        home.mkdir(parents=True, exist_ok=True)
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPHLEMON_"))}
        self.env = {
            **clean,
            "PATH": f"{BIN}:{clean.get('PATH', '/usr/bin:/bin')}",
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": self.url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_API_URL": self.url,
            "GRAPHLEMON_CONFIG_DIR": str(self.base / "gl-config"),
        }
        self.spawn("server", [PY, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                   self.env)  # fmt: skip
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("server not healthy: " + (self.base / "server.log").read_text()[-2000:])

    def deploy(self) -> None:
        sh([PY, "-m", "prefect", "work-pool", "create", "graphlemon-units", "--type", "process", "--overwrite"], self.env)
        sh([PY, "-m", "prefect", "--no-prompt", "deploy", "-n", "remote-unit-loop", "--pool", "graphlemon-units"],
           self.env)  # fmt: skip
        self.store.mkdir(parents=True, exist_ok=True)
        sh([PY, "-c", "from prefect.filesystems import LocalFileSystem as L; "
            f"L(basepath={str(self.store)!r}).save('graphlemon-results', overwrite=True)"], self.env)  # fmt: skip

    def make_project(self) -> None:
        shutil.copytree(SNAKE / "repo", self.proj)
        shutil.copytree(SNAKE, self.base / "example", ignore=shutil.ignore_patterns("repo"))
        g = ["git", "-C", str(self.proj)]
        sh([*g, "init", "-q", "-b", "main"], self.env)
        sh([*g, "add", "-A"], self.env)
        sh([*g, "-c", "user.name=R", "-c", "user.email=r@example.com", "commit", "-qm", "start"], self.env)
        sh([str(BIN / "graphlemon"), "init", str(self.proj)], self.env)
        self.remotes.mkdir(parents=True, exist_ok=True)
        bare = self.remotes / "snake.git"
        sh(["git", "init", "-q", "--bare", str(bare)], self.env)
        sh([PY, "-c", "from graphlemon.project import open_project, update_settings as u; "
            f"u(open_project({str(self.proj)!r}), git_remote={bare.as_uri()!r})"], self.env)  # fmt: skip

    def up(self) -> "Stack":
        self.base.mkdir(parents=True, exist_ok=True)
        self.start_server()
        self.deploy()
        self.make_project()
        return self

    # --- processes ---------------------------------------------------------------------------------------------
    def spawn(self, name: str, args, env, cwd=None) -> subprocess.Popen:
        log = open(self.base / f"{name}.log", "a")
        # SIGINT back to its default: a runner started in the background inherits it ignored, and then a Ctrl-C
        # sent to the CLI never arrives (runner fix after C09's first run)
        proc = subprocess.Popen(args, cwd=cwd or ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
        self.procs[name] = proc
        return proc

    def worker_env(self, extra_pythonpath: str | None = None) -> dict:
        env = {**self.env, "PREFECT_DEFAULT_RESULT_STORAGE_BLOCK": STORE_SLUG}
        if extra_pythonpath:
            env["PYTHONPATH"] = extra_pythonpath
        return env

    def start_worker(self, name: str, extra_pythonpath: str | None = None, extra_binds=()) -> subprocess.Popen:
        home = self.base / name
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        env = {**self.worker_env(extra_pythonpath), "HOME": str(home), "TMPDIR": str(home / "tmp"),
               "PREFECT_HOME": str(home / "prefect")}  # fmt: skip
        binds = []
        for p in (self.store, self.remotes, home, *extra_binds):
            binds += ["--bind", str(p), str(p)]
        args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", "/proc", "/proc", "--tmpfs", "/tmp", *binds,
                "--chdir", str(home), PY, "-m", "prefect", "worker", "start", "--pool", "graphlemon-units",
                "--type", "process", "--name", name]  # fmt: skip
        return self.spawn(name, args, env, cwd=home)

    def stop(self, name: str, sig=signal.SIGTERM) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None:
            killpg(proc, sig)

    def down(self) -> None:
        for name in [n for n in self.procs if n != "server"]:
            self.stop(name)
        self.stop("server")

    def devloop_env(self, storage: bool = True) -> dict:
        env = dict(self.env)
        if storage:
            env["PREFECT_DEFAULT_RESULT_STORAGE_BLOCK"] = STORE_SLUG
        return env

    def start_devloop(self, name="devloop", storage=True, goal="Implement a snake game", config=None,
                      env_extra=None) -> subprocess.Popen:  # fmt: skip
        config = config or {"unit_runner": "remote_pool"}
        code = ("from graphlemon.flows.devloop import devloop; import json; "
                f"r = devloop(goal={goal!r}, project={str(self.proj)!r}, executor='scripted', "
                f"playbook={str(self.playbook)!r}, config={config!r}, return_state=True); "
                "print('RESULT', r.type.value, r.name, repr(r.message))")  # fmt: skip
        env = {**self.devloop_env(storage), **(env_extra or {})}
        return self.spawn(name, [PY, "-c", code], env, cwd=self.base)

    def gl(self, *args, storage=True, timeout=900, check=False) -> subprocess.CompletedProcess:
        return sh([str(BIN / "graphlemon"), *args], self.devloop_env(storage), cwd=self.base, timeout=timeout,
                  check=check)  # fmt: skip

    # --- reading -----------------------------------------------------------------------------------------------
    @contextmanager
    def client(self):
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.url}), get_client(sync_client=True) as c:
            yield c

    def flow_runs(self, name_like: str | None = None):
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

        with self.client() as c:
            flt = FlowRunFilter(name=FlowRunFilterName(like_=name_like)) if name_like else None
            return c.read_flow_runs(flow_run_filter=flt, limit=200)

    def unit_runs(self):
        return [r for r in self.flow_runs("unit ") if r.name.startswith("unit ")]

    def status(self, task: str | None = None) -> dict:
        p = self.gl("status", *([task] if task else []), "-p", str(self.proj), "--json", check=False)
        try:
            return json.loads(p.stdout)
        except json.JSONDecodeError:
            return {"raw": p.stdout[-2000:], "err": p.stderr[-2000:]}

    def ledger_lines(self, name: str) -> list[dict]:
        path = self.proj / ".graphlemon" / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def grep_ledger(self, word: str) -> list[str]:
        out = []
        for path in sorted((self.proj / ".graphlemon").glob("*.ndjson")):
            out += [f"{path.name}: {line[:400]}" for line in path.read_text().splitlines() if word in line]
        return out

    def tasks(self) -> list[str]:
        return sorted({r["task_id"] for r in self.ledger_lines("tasks.ndjson")})
