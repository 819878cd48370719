"""`FakeClaude`: put a scripted fake `claude` executable on PATH for a test.

    claude = FakeClaude(tmp_path)                       # or the `fake_claude` fixture
    claude.queue(
        success(structured_output={"ok": True}, writes={"tests/test_a.py": "..."}),
        session_limit("You've hit your session limit · resets 3pm (UTC)"),
        denials(3),
    )
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude.config))   # the `fake_claude` fixture does it
    settings = AgentSettings(claude_bin=str(claude.bin), ...)   # or a subprocess's environment from claude.env()
    ...
    claude.calls[0]["argv"]  # what our executor passed

It is installed as the real one is: `bin/claude` is a link to `fake_claude.py` (run by the system's `python3`),
and what it keeps between runs lives in its config dir, `$CLAUDE_CONFIG_DIR` — what the sandbox shows a confined
`claude` (its executable, the folder its link resolves to, its config dir, the work tree), nothing more.

Each run of the executable consumes one behaviour: the first queued one whose
`match` fits the call (see fake_claude.py for the match keys and the step
vocabulary), so `when(success(...), system="You are the Coder agent")` scripts
turns that run in parallel. The queue and the call log live in files, so
behaviours survive across processes (a CLI subprocess, a Prefect worker).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("fake_claude.py")


class FakeClaude:
    def __init__(self, folder: Path) -> None:
        root = Path(folder) / "fake-claude"
        (root / "bin").mkdir(parents=True, exist_ok=True)
        self.bin = root / "bin" / "claude"
        self.bin.unlink(missing_ok=True)
        self.bin.symlink_to(SCRIPT)
        self.folder = self.config = root / "config"  # $CLAUDE_CONFIG_DIR: the queue and the call log
        self.config.mkdir(exist_ok=True)
        (self.folder / "queue.json").write_text("[]")

    def queue(self, *behaviours: dict[str, Any]) -> None:
        path = self.folder / "queue.json"
        path.write_text(json.dumps(json.loads(path.read_text()) + list(behaviours)))

    @property
    def pending(self) -> int:
        return len(json.loads((self.folder / "queue.json").read_text()))

    @property
    def calls(self) -> list[dict[str, Any]]:
        log = self.folder / "calls.ndjson"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def env(self) -> dict[str, str]:
        """PATH with the fake first and its config dir (for subprocesses such as the CLI)."""
        return {
            "PATH": f"{self.bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "CLAUDE_CONFIG_DIR": str(self.config),
        }


# -- behaviours ---------------------------------------------------------------------------------


def when(behaviour: dict[str, Any], **match: str | list[str]) -> dict[str, Any]:
    """`behaviour`, taken only by a call that fits `match` (system= / stdin= / prompt= / cwd= / argv= substrings)."""
    return {**behaviour, "match": match}


def success(
    *,
    result: str = "done",
    structured_output: dict[str, Any] | None = None,
    writes: dict[str, str] | None = None,
    deletes: list[str] | None = None,
    texts: list[str] | None = None,
    todos: list[dict[str, str]] | None = None,
    usage: dict[str, int] | None = None,
    exit_code: int = 0,
) -> dict[str, Any]:
    """A turn that ends well. `writes` paths are relative to the call's cwd (the worktree)."""
    steps: list[dict[str, Any]] = [{"text": t} for t in texts or []]
    if todos is not None:
        steps.append({"todo": todos})
    for path, content in (writes or {}).items():
        steps.append(
            {
                "tool": {
                    "name": "Write",
                    "input": {"file_path": path},
                    "write": {"path": path, "content": content},
                    "result": f"wrote {path}",
                }
            }
        )
    for path in deletes or []:
        steps.append({"tool": {"name": "Bash", "input": {"command": f"rm {path}"}, "delete": path, "result": ""}})
    final: dict[str, Any] = {"result": result}
    if structured_output is not None:
        final["structured_output"] = structured_output
    steps.append({"result": final})
    return {"steps": steps, "usage": usage, "exit_code": exit_code}


def bash(*commands: str, writes: dict[str, str] | None = None, result: str = "done") -> dict[str, Any]:
    """A turn that writes `writes` (Write tool), then runs each shell command in the work tree (Bash tool, for real:
    `git commit`, `git tag`, a `.gitignore` written by `printf`...), then ends well."""
    turn = success(writes=writes, result=result)
    turn["steps"][-1:-1] = [{"bash": command} for command in commands]
    return turn


LIMIT_TEXT = {
    "session": ("You've hit your session limit · resets 3pm (UTC)", "five_hour"),
    "weekly": ("You've hit your weekly limit · resets Jul 31, 2am (UTC)", "seven_day"),
    "opus": ("You've hit your Opus limit · resets 9am (UTC)", "seven_day_opus"),
}


def usage_limit(
    kind: str = "session", *, text: str | None = None, resets_at: int | None = None, exit_code: int = 1
) -> dict[str, Any]:
    default_text, rate_type = LIMIT_TEXT[kind]
    spec = {"text": text or default_text, "rate_limit_type": rate_type, "resets_at": resets_at}
    return {"steps": [{"limit": spec}], "exit_code": exit_code}


def session_limit(text: str | None = None, **kw: Any) -> dict[str, Any]:
    return usage_limit("session", text=text, **kw)


def denials(
    count: int, *, then_allowed: int = 0, finish: bool = True, reason: str = "[Irreversible Local Destruction]"
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"deny": {"name": "Bash", "input": {"command": "rm -rf build"}, "reason": reason}} for _ in range(count)
    ]
    steps += [
        {"tool": {"name": "Read", "input": {"file_path": "README.md"}, "result": "# target"}}
        for _ in range(then_allowed)
    ]
    if finish:
        steps.append({"result": {"result": '{"ok": true}'}})
    return {"steps": steps}


def crash(exit_code: int = 2, stderr: str = "Error: something broke") -> dict[str, Any]:
    return {"steps": [{"stderr": stderr}], "exit_code": exit_code}


def hang(seconds: float = 30) -> dict[str, Any]:
    return {"steps": [{"text": "thinking..."}, {"sleep": seconds}, {"result": {"result": "late"}}]}
