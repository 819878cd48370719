#!/usr/bin/env python3
"""A fake `claude` CLI: emits Claude Code's stream-json events from a scripted queue.

Installed on PATH as `claude` by `tests/fakes/claude.py::FakeClaude` (a link to this file, run by the
system's `python3`, standard library only). Each run asks "its API", the behaviour server at
`$CLAUDE_FAKE_SERVER` (through the proxy variables it is given, as the real one reaches its API; directly at
127.0.0.1 without them), for a behaviour: the
first one whose `match` fits the call (a behaviour without `match` fits any), so
turns that run in parallel threads still get their own behaviour. `match` maps
`system` (the --append-system-prompt text), `stdin`, `prompt` (both), `cwd` or `argv` (joined by
spaces) to a substring or a list of substrings that must all occur (any run of
whitespace matches any other). The server records the run's argv, cwd and stdin. A behaviour
is `{"steps": [...], "exit_code": 0, "match": {...}}`; steps run in order:

  {"text": "..."}                                       assistant text (one model call)
  {"tool": {"name": "Write", "input": {...}, "write": {"path": p, "content": c},
            "delete": p, "result": "...", "is_error": false}}  tool_use + tool_result
  {"deny": {"name": "Bash", "input": {...}, "reason": "..."}}  classifier denial
  {"bash": "git commit -qam x"}   a Bash tool call really run by `sh -c` in the cwd (its output is the result)
  {"todo": [{"content": "...", "status": "completed"}]}   a TodoWrite tool call
  {"limit": {"text": "...", "rate_limit_type": "five_hour", "resets_at": 1760004000}}
  {"sleep": 0.5}   {"stderr": "..."}   {"raw": "not json"}
  {"result": {"result": "...", "structured_output": {...}, "is_error": false, "subtype": "success"}}

A behaviour `{"conformance": {"solution": FILE, "log": FILE}}` has no steps of its own: it does what
the prompt says (conformance.py), and appends each conformance violation to the log as a JSON line.

Usage per model call comes from the behaviour's `usage` (default small numbers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

DENIAL = "Permission for this action was denied by the Claude Code auto mode classifier. Reason: {reason}"


def main() -> int:
    prompt = sys.stdin.read()
    call = {
        "system": _arg("--append-system-prompt") or "",
        "stdin": prompt,
        "prompt": (_arg("--append-system-prompt") or "") + "\n" + prompt,
        "cwd": os.getcwd(),
        "argv": sys.argv[1:],
    }
    try:
        behaviour = _api("/take", {**call, "argv": " ".join(sys.argv[1:]), "argv_list": sys.argv[1:]})["behaviour"]
    except OSError as exc:
        print(f"fake claude: its API cannot be reached: {exc}", file=sys.stderr)
        return 4
    if behaviour is None:
        print("fake claude: no scripted behaviour left for this call", file=sys.stderr)
        return 3
    session = str(uuid.uuid4())
    model = _arg("--model") or "claude-sonnet-5-5"
    usage = behaviour.get("usage") or {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
    }
    emit(
        {
            "type": "system",
            "subtype": "init",
            "cwd": os.getcwd(),
            "session_id": session,
            "model": model,
            "tools": ["Read", "Write", "Edit", "Bash"],
            "permissionMode": _arg("--permission-mode") or "default",
        }
    )
    if "conformance" in behaviour:
        behaviour = {**behaviour, "steps": _conformance_steps(behaviour["conformance"], prompt)}
    calls = 0
    for step in behaviour.get("steps", []):
        kind, spec = next(iter(step.items()))
        if kind == "text":
            calls += 1
            emit(assistant(session, model, [{"type": "text", "text": spec}], usage))
        elif kind in ("tool", "deny", "todo", "bash"):
            calls += 1
            tool_id = f"toolu_{uuid.uuid4().hex[:12]}"
            if kind == "bash":
                spec = {"name": "Bash", "input": {"command": spec}, "run": spec}
            if kind == "todo":
                spec = {
                    "name": "TodoWrite",
                    "input": {"todos": spec},
                    "result": "Todos have been modified successfully",
                }
            emit(
                assistant(
                    session,
                    model,
                    [{"type": "tool_use", "id": tool_id, "name": spec["name"], "input": spec.get("input", {})}],
                    usage,
                )
            )
            if kind == "deny":
                result, is_error = DENIAL.format(reason=spec.get("reason", "[Risky action]")), True
            else:
                _apply(spec)
                result, is_error = spec.get("result", "ok"), bool(spec.get("is_error", False))
            emit(
                {
                    "type": "user",
                    "session_id": session,
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": tool_id, "content": result, "is_error": is_error}
                        ],
                    },
                }
            )
        elif kind == "limit":
            info = {"status": "rejected", "rateLimitType": spec.get("rate_limit_type", "five_hour")}
            if spec.get("resets_at") is not None:
                info["resetsAt"] = spec["resets_at"]
            emit({"type": "rate_limit_event", "rate_limit_info": info, "session_id": session})
            synthetic = assistant(
                session,
                "<synthetic>",
                [{"type": "text", "text": spec["text"]}],
                {"input_tokens": 0, "output_tokens": 0},
            )
            synthetic["error"] = "rate_limit"
            emit(synthetic)
            emit(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": True,
                    "result": spec["text"],
                    "session_id": session,
                    "num_turns": calls,
                    "total_cost_usd": 0,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                }
            )
        elif kind == "sleep":
            time.sleep(float(spec))
        elif kind == "stderr":
            print(spec, file=sys.stderr, flush=True)
        elif kind == "raw":
            print(spec, flush=True)
        elif kind == "result":
            emit(
                {
                    "type": "result",
                    "subtype": spec.get("subtype", "success"),
                    "is_error": spec.get("is_error", False),
                    "duration_ms": 10,
                    "num_turns": calls,
                    "result": spec.get("result", ""),
                    "session_id": session,
                    "total_cost_usd": 0.001,
                    "usage": usage,
                    **({"structured_output": spec["structured_output"]} if "structured_output" in spec else {}),
                }
            )
    return int(behaviour.get("exit_code", 0))


def _conformance_steps(options: dict, prompt: str) -> list[dict]:
    """Read, Write and the structured answer, as the prompt (system + stdin) says; violations go to the log."""
    from conformance import plan

    solution = options["solution_data"]
    todo, problems = plan(_arg("--append-system-prompt") or "", prompt, solution, "claude_code")
    allowed = (_arg("--allowedTools") or "").split(",")
    bare = {a.split("(", 1)[0] for a in allowed}
    problems += [
        f"{todo.facts.role}: TOOLS names {t!r}, not started with it" for t in todo.facts.tools if t not in bare
    ]
    writable = [a[len("Write(") : -1] for a in allowed if a.startswith("Write(")]
    from conformance import glob_match

    for path in todo.writes:
        if not any(glob_match(g, path) for g in writable):
            problems.append(f"{todo.facts.role}: SANDBOX lists {path!r} but Write is not allowed there")
    lines = [json.dumps({"violation": problem}) for problem in problems]
    lines.append(json.dumps({"role": todo.facts.role, "system": _arg("--append-system-prompt"), "stdin": prompt}))
    _api("/log", {"log": options["log"], "lines": lines})
    steps: list[dict] = []
    for rel in todo.reads:
        path = Path(os.getcwd()) / rel
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else f"<no such file {rel}>"
        steps.append({"tool": {"name": "Read", "input": {"file_path": str(path)}, "result": text[:16000]}})
    for rel, content in todo.writes.items():
        path = str(Path(os.getcwd()) / rel)
        steps.append({"tool": {"name": "Write", "input": {"file_path": path, "content": content},
                               "write": {"path": path, "content": content}, "result": f"wrote {rel}"}})  # fmt: skip
    steps.append({"result": {"result": "done", "structured_output": todo.answer}})
    return steps


def assistant(session: str, model: str, content: list[dict], usage: dict) -> dict:
    message = {
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "usage": usage,
    }
    return {"type": "assistant", "message": message, "session_id": session, "parent_tool_use_id": None}


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


def _apply(spec: dict) -> None:
    if "run" in spec:
        proc = subprocess.run(["sh", "-c", spec["run"]], capture_output=True, text=True)
        spec["result"] = (proc.stdout + proc.stderr)[-4000:] or f"exit {proc.returncode}"
        spec["is_error"] = proc.returncode != 0
        _api("/note", {"bash": spec["result"]})  # what the test sees of a turn that has no transcript (a probe)
    if "write" in spec:
        path = Path(spec["write"]["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec["write"]["content"], encoding="utf-8")
    if "delete" in spec:
        Path(spec["delete"]).unlink()


def _arg(name: str) -> str | None:
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def _api(path: str, payload: dict) -> dict:
    """A call to the behaviour server, as the real claude calls its API: through the proxy it is given, or
    straight to 127.0.0.1 when it is given none."""
    url = os.environ["CLAUDE_FAKE_SERVER"].rstrip("/") + path
    if not (os.environ.get("http_proxy") or os.environ.get("HTTP_PROXY")):
        parts = urllib.parse.urlsplit(url)
        url = parts._replace(netloc=f"127.0.0.1:{parts.port}").geturl()
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


if __name__ == "__main__":
    sys.exit(main())
