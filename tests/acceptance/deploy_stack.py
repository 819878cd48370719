"""Helpers of the REQ-15 deploy tests: a copy of GraphLemon's own repository as the production project, a load
client through the proxy, and clean-up of every process by PID."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=GraphLemon test", "-c", "user.email=test@graphlemon.local"]
# the condition the planted core_engine bug inverts (graphlemon/stages/planner.py, check_plan)
GOOD_LINE = 'if u.unit_id not in drafts.docs["sdd"]:'
PLANTED_LINE = 'if u.unit_id in drafts.docs["sdd"]:'
PLANNER = "graphlemon/stages/planner.py"
# the DevLoop task that fixes it on a self-hosted copy (examples/selfdev: scripted, run with max_unit_attempts=1)
SELFDEV_PLAYBOOK = ROOT / "examples" / "selfdev" / "playbook.yaml"
SELFDEV_GOAL = "check_plan rejects every consistent plan (graphlemon/stages/planner.py): find and fix it"


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def copy_graphlemon(dest: Path) -> Path:
    """GraphLemon's code as it is in this checkout (tracked and new files; tests and images left out), committed
    in a fresh repository."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\n")  # fmt: skip
    keep = [f for f in files if f and not f.startswith("tests/") and not f.endswith(".png") and (ROOT / f).is_file()]
    for rel in keep:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "GraphLemon")
    return dest


def edit_and_commit(repo: Path, path: str, old: str, new: str, message: str) -> str:
    target = repo / path
    text = target.read_text()
    assert old in text, f"{old!r} not in {path}"
    target.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-q", "-am", message)
    return git(repo, "rev-parse", "HEAD")


def docs_commit(repo: Path, line: str) -> str:
    with open(repo / "README.md", "a") as fh:
        fh.write(f"\n{line}\n")
    git(repo, "commit", "-q", "-am", f"docs: {line}")
    return git(repo, "rev-parse", "HEAD")


@dataclass
class LoadClient:
    """GET /healthz through the proxy at a steady rate (one new connection each), from a thread."""

    port: int
    interval: float = 0.02
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    served: list[tuple[float, str]] = field(default_factory=list)  # (time, commit)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> LoadClient:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        import json

        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as resp:
                    commit = json.loads(resp.read())["commit"]
                    self.ok += 1
                    self.served.append((time.monotonic(), commit))
            except Exception as exc:  # every failure counts, whatever it is
                self.failed.append(f"{time.monotonic():.3f} {type(exc).__name__}: {exc}")
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def switch_gaps(self) -> list[float]:
        """Seconds between the last answer of one commit and the first answer of the next, per switch."""
        gaps = []
        for (t0, c0), (t1, c1) in zip(self.served, self.served[1:], strict=False):
            if c0 != c1:
                gaps.append(t1 - t0)
        return gaps

    def commits(self) -> list[str]:
        seen: list[str] = []
        for _, commit in self.served:
            if not seen or seen[-1] != commit:
                seen.append(commit)
        return seen
