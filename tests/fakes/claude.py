"""`FakeClaude`: put a scripted fake `claude` executable on PATH for a test.

    claude = FakeClaude(tmp_path)                       # or the `fake_claude` fixture
    claude.queue(
        success(structured_output={"ok": True}, writes={"tests/test_a.py": "..."}),
        session_limit("You've hit your session limit · resets 3pm (UTC)"),
        denials(3),
    )
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude.config))   # the `fake_claude` fixture does it
    settings = AgentSettings(claude_bin=str(claude.bin), claude_egress=[claude.egress], ...)   # or claude.env()
    ...
    claude.calls[0]["argv"]  # what our executor passed

It is installed as the real one is: `bin/claude` is a link to `fake_claude.py` (run by the system's `python3`).
Like the real one, it gets its turns from "its API": a behaviour server on 127.0.0.1 in the test process, which the
fake reaches by name (`$CLAUDE_FAKE_SERVER`, http://fake-claude-N.test:PORT) through the proxy variables it is
given — inside the sandbox, the egress proxy, which lets the name through because `claude.egress`
(`fake-claude-N.test:PORT=127.0.0.1`, GRAPHLEMON_CLAUDE_EGRESS / AgentSettings.claude_egress) allows it and pins it
to the server's address. Without proxy variables (the sandbox opted out) it connects to 127.0.0.1 directly.
`claude.config` is the person's own config dir ($CLAUDE_CONFIG_DIR): a turn sees only a read-only copy of its
login (`.credentials.json`), in a folder of its own.

Each run of the executable consumes one behaviour: the first queued one whose
`match` fits the call (see fake_claude.py for the match keys and the step
vocabulary), so `when(success(...), system="You are the Coder agent")` scripts
turns that run in parallel. The queue and the call log live in the server, so
behaviours are shared by every process the test starts (a CLI subprocess, a Prefect worker).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import weakref
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("fake_claude.py")
_names = itertools.count(1)


class _Behaviours:
    """The queue and the call log, shared by every run of the fake (one lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.logs: set[str] = set()  # the conformance logs handed out: the only files the fake may append to
        self.bash_outputs: list[str] = []  # what each Bash step printed, in order

    def take(self, call: dict[str, Any]) -> dict[str, Any] | None:
        with self.lock:
            self.calls.append({"argv": call.get("argv_list"), "cwd": call.get("cwd"), "stdin": call.get("stdin")})
            index = next((i for i, item in enumerate(self.items) if _fits(item.get("match"), call)), None)
            if index is None:
                return None
            behaviour = self.items.pop(index)
        if "conformance" in behaviour:
            options = dict(behaviour["conformance"])
            options["solution_data"] = json.loads(Path(options["solution"]).read_text())
            with self.lock:
                self.logs.add(options["log"])
            behaviour = {**behaviour, "conformance": options}
        return behaviour

    def append_log(self, path: str, lines: list[str]) -> None:
        with self.lock:
            if path not in self.logs:
                raise ValueError(f"{path} is not a conformance log")
            with open(path, "a", encoding="utf-8") as fh:
                fh.writelines(line + "\n" for line in lines)


def _fits(match: dict | None, call: dict) -> bool:
    """Every wanted substring occurs (whitespace runs compare equal: skills wrap their lines)."""
    for key, wanted in (match or {}).items():
        text = " ".join(str(call.get(key, "")).split())
        if not all(" ".join(part.split()) in text for part in ([wanted] if isinstance(wanted, str) else wanted)):
            return False
    return True


def _handler(state: _Behaviours) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            try:
                if self.path.endswith("/take"):
                    answer: dict[str, Any] = {"behaviour": state.take(body)}
                elif self.path.endswith("/note"):
                    with state.lock:
                        state.bash_outputs.append(str(body["bash"]))
                    answer = {"ok": True}
                elif self.path.endswith("/log"):
                    state.append_log(str(body["log"]), [str(line) for line in body["lines"]])
                    answer = {"ok": True}
                else:
                    raise ValueError(f"no such endpoint {self.path}")
                status = 200
            except (ValueError, KeyError, OSError) as exc:
                answer, status = {"error": str(exc)}, 400
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def _stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


class FakeClaude:
    def __init__(self, folder: Path) -> None:
        root = Path(folder) / "fake-claude"
        (root / "bin").mkdir(parents=True, exist_ok=True)
        self.bin = root / "bin" / "claude"
        self.bin.unlink(missing_ok=True)
        self.bin.symlink_to(SCRIPT)
        self.folder = self.config = root / "config"  # the person's $CLAUDE_CONFIG_DIR (its login, if a test puts one)
        self.config.mkdir(exist_ok=True)
        self._state = _Behaviours()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self._state))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._finalizer = weakref.finalize(self, _stop, server)
        port = server.server_address[1]
        name = f"fake-claude-{next(_names)}.test"
        self.server_url = f"http://{name}:{port}"
        self.egress = f"{name}:{port}=127.0.0.1"  # the egress proxy's rule that lets the fake reach its server

    def close(self) -> None:
        self._finalizer()

    def queue(self, *behaviours: dict[str, Any]) -> None:
        with self._state.lock:
            self._state.items += list(behaviours)

    @property
    def pending(self) -> int:
        with self._state.lock:
            return len(self._state.items)

    @property
    def calls(self) -> list[dict[str, Any]]:
        with self._state.lock:
            return list(self._state.calls)

    def setenv(self, monkeypatch: Any) -> None:
        """This test's environment names the fake's config dir, server and egress rule (not PATH: the settings
        name the executable)."""
        for name, value in self.env().items():
            if name != "PATH":
                monkeypatch.setenv(name, value)

    @property
    def bash_outputs(self) -> list[str]:
        with self._state.lock:
            return list(self._state.bash_outputs)

    def env(self) -> dict[str, str]:
        """PATH with the fake first, its config dir, its server and the egress rule (for subprocesses such as the
        CLI, whose settings come from the environment)."""
        return {
            "PATH": f"{self.bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "CLAUDE_CONFIG_DIR": str(self.config),
            "CLAUDE_FAKE_SERVER": self.server_url,
            "GRAPHLEMON_CLAUDE_EGRESS": self.egress,
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
