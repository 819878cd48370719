"""What each role's first request costs before the model has done anything (printed, never asserted).

Every role's first turn is recorded as its stage really builds it: the snake demo's stages through its
scripted playbooks (planner, coder, tester, integrator, validator; the skill demo adds the skill-editor)
and the triage stage over a failed integration run (bug-triager). Each request is then rendered the way
the anthropic backend sends it, and measured in three parts:

* static — the system block every turn of the role shares (skill, tool notes, output rules) plus the tool
  definitions (names, descriptions, input schemas; `submit_output` included): the cached prefix;
* docs — the shared documents block (the SDD, the PRD: cached once for every unit of the task);
* first — the turn's first message (ids, sandbox, files, memory, the stage's context).

Tokens are characters / 4, as the local fake Messages server counts them. The requests come from this
checkout's demo playbooks and fixtures; the prompts are rendered by whichever `graphlemon` is imported, so
the table of another version is this script run with `PYTHONPATH=<that checkout>` (issue 48: before and
after). `BENCH_SMOKE=1` records the planner's and the bug-triager's requests only (seconds).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import graphlemon

ROOT = Path(graphlemon.__file__).resolve().parents[1]  # the tree under measurement (PYTHONPATH may point elsewhere)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fakes and fixtures of this checkout

from fakes.stage_requests import SNAKE, Recording, snake_loop  # noqa: E402

from graphlemon.agents import build_executor  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
ROLES = ("planner", "coder", "tester", "integrator", "validator", "bug-triager", "skill-editor")
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def snake_requests(base: Path, playbook: str, seen: dict) -> None:
    recording = snake_loop(base / playbook.replace(".", "-"), playbook,
                           Recording(build_executor("scripted", playbook=SNAKE / playbook)), planner_only=SMOKE)  # fmt: skip
    for role, request in recording.first.items():
        seen.setdefault(role, request)


def triage_request(base: Path, seen: dict) -> None:
    from triage.conftest import make_scenario

    from graphlemon.triage import triage_run

    scenario = make_scenario("cm01_expired_token_accepted", base)
    playbook = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "triage" / "playbooks" / "good-verdict.yaml"
    recording = Recording(build_executor("scripted", playbook=playbook))
    triage_run(scenario.project, scenario.run_id, executor=recording)
    seen.update(recording.first)


def wire(request) -> tuple[list[str], list[dict], str]:
    """(system blocks, tool definitions, first message) as the anthropic backend sends them."""
    from graphlemon.agents import anthropic_backend as backend

    if hasattr(backend, "wire_prompt"):
        prompt = backend.wire_prompt(request)
        return prompt.system, prompt.tools, prompt.first_message
    from graphlemon.agents.prompt import render  # the tree before issue 48
    from graphlemon.agents.tools import tool_specs

    rendered = render(request, "anthropic")
    return rendered.system, tool_specs(request.tools) + [backend._submit_spec(request)], rendered.first_message


def tokens(chars: int) -> int:
    return chars // 4


def main() -> None:
    os.environ.update(GIT_ENV)
    seen: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-prompts-") as tmp:
        snake_requests(Path(tmp), "playbook.yaml", seen)
        if not SMOKE:
            snake_requests(Path(tmp), "playbook-skill.yaml", seen)
        triage_request(Path(tmp), seen)
        rows = []
        for role in ROLES:
            if role not in seen:
                continue
            system, tools, first = wire(seen[role])
            tool_chars = len(json.dumps(tools, ensure_ascii=False))
            rows.append((role, len(system[0]), tool_chars, sum(len(s) for s in system[1:]), len(first)))
    print(f"Per-role first request on the anthropic backend (tree: {ROOT}); tokens = characters / 4")
    head = ("role", "static tok", "  system", "  tools", "docs tok", "first tok", "total tok")
    print(f"{head[0]:13}" + "".join(f"{h:>11}" for h in head[1:]))
    for role, system, tool_chars, docs, first in rows:
        static = tokens(system + tool_chars)
        cells = (static, tokens(system), tokens(tool_chars), tokens(docs), tokens(first),
                 static + tokens(docs) + tokens(first))  # fmt: skip
        print(f"{role:13}" + "".join(f"{c:>11}" for c in cells))
    if SMOKE:
        print("(BENCH_SMOKE=1: the planner and the bug-triager only; run without it for every role)")


if __name__ == "__main__":
    main()
