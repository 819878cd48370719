"""The conformance fake model: it does exactly what a rendered prompt says, nothing it does not say.

It reads the prompt (the system text and the first message) the way a model would, never the
request behind it:

* TOOLS: the tools it may call — the only names it uses (on the Messages API: the request's tool
  definitions, which is where that backend says it);
* SANDBOX: the paths it may write — it writes there every file of the `solution` (path -> text,
  a fixture: a fake cannot invent code) that a listed glob matches, and nothing else;
* FILES: the work tree — it reads the files listed there before it writes;
* OUTPUT: the JSON schema of the answer — it submits an instance of it, built from the schema in
  the prompt, or on the Messages API from `submit_output`'s input schema (the files and tests it
  names are the ones it wrote).

A step the harness refuses (a tool error, a refused write, a rejected answer) is a conformance
violation: the prompt told the model to do something the harness does not allow. Violations are
collected in `ConformanceLog` and make the test fail. Only the standard library is used here:
the fake `claude` process imports this module too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READ_TOOLS = {"anthropic": "read_file", "claude_code": "Read"}
WRITE_TOOLS = {"anthropic": "write_file", "claude_code": "Write"}
MAX_READS = 6


@dataclass
class PromptFacts:
    tools: list[str]
    writable: list[str]
    tree: list[str]  # files shown in FILES (paths relative to the work tree)
    schema: dict[str, Any]
    role: str


def _section(text: str, name: str) -> str:
    m = re.search(rf"^# {name}\n(.*?)(?=^# [A-Z][A-Z ]+\n|\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def read_prompt(system: str, first_message: str, declared: list[dict[str, Any]] | None = None) -> PromptFacts:
    """`declared`: the request's tool definitions (the Messages API), else the prompt's TOOLS and OUTPUT."""
    if declared is not None:
        tools = [t["name"] for t in declared]
        schema = next((t["input_schema"] for t in declared if t["name"] == "submit_output"), {})
    else:
        tools = re.findall(r"^- `([^`]+)`:", _section(system, "TOOLS"), re.M)
        fence = re.search(r"```json\n(.*?)\n```", _section(system, "OUTPUT"), re.S)
        schema = json.loads(fence.group(1)) if fence else {}
    writable = re.findall(r"^- `([^`]+)`\s*$", _section(first_message, "SANDBOX"), re.M)
    role = re.search(r"^role ([\w-]+)", _section(first_message, "THIS TURN").strip(), re.M)
    return PromptFacts(tools, writable, _tree(_section(first_message, "FILES")), schema, role.group(1) if role else "")


def _tree(section: str) -> list[str]:
    """The files of the two-level listing (`name`, `folder/` then indented `name`)."""
    block = re.search(r"```\n(.*?)\n```", section, re.S)
    files, folder = [], ""
    for line in (block.group(1) if block else "").splitlines():
        name = line.strip().removesuffix(" *")
        if not line.startswith(" "):
            folder = name if name.endswith("/") else ""
            if not folder:
                files.append(name)
        elif not name.endswith(")") and not name.endswith("/"):
            files.append(folder + name)
    return files


def glob_match(pattern: str, path: str) -> bool:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.fullmatch("".join(out), path) is not None


def instance(schema: dict[str, Any], root: dict[str, Any], name: str = "", written: list[str] | None = None) -> Any:
    """A value that satisfies `schema` (`$ref`s resolved against `root`); a list of files or tests is `written`."""
    written = written or []
    if "$ref" in schema:
        ref = schema["$ref"].rsplit("/", 1)[-1]
        return instance(root.get("$defs", {})[ref], root, name, written)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return instance(options[0], root, name, written)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        wanted = set(schema.get("required", [])) | {k for k in props if k in ("files", "tests", "summary")}
        return {k: instance(props[k], root, k, written) for k in props if k in wanted}
    if kind == "array":
        if name in ("files", "tests"):
            return list(written)
        return [instance(schema.get("items", {}), root, name, written) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        text = f"conformance fake: {name or 'text'} (the files written: {', '.join(written) or 'none'})"
        return text.ljust(schema.get("minLength", 0), ".")
    if kind in ("integer", "number"):
        return schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
    if kind == "boolean":
        return True
    return None


@dataclass
class Plan:
    """What the prompt says to do, in order: read, write, (run the tests), answer."""

    reads: list[str]
    writes: dict[str, str]
    run_tests: list[str]
    answer: Any
    facts: PromptFacts


def plan(
    system: str, first_message: str, solution: dict[str, str], backend: str, declared: list[dict[str, Any]] | None = None
) -> tuple[Plan, list[str]]:
    """-> (the plan, what the prompt gets wrong before any tool is called)."""
    facts = read_prompt(system, first_message, declared)
    problems = []
    for needed in (READ_TOOLS[backend],):
        if needed not in facts.tools:
            problems.append(f"{facts.role}: the prompt gives no tool to read files ({needed})")
    writes = {p: text for p, text in sorted(solution.items()) if any(glob_match(g, p) for g in facts.writable)}
    if writes and WRITE_TOOLS[backend] not in facts.tools:
        problems.append(f"{facts.role}: the SANDBOX lists writable paths but TOOLS has no {WRITE_TOOLS[backend]}")
    if not facts.schema:
        problems.append(f"{facts.role}: the prompt has no OUTPUT schema")
    reads = [p for p in facts.tree if p not in writes][:MAX_READS]
    tests = [p for p in writes if Path(p).name.startswith("test_")]
    run = tests if backend == "anthropic" and "run_tests" in facts.tools else []
    answer = instance(facts.schema, facts.schema, written=list(writes))
    return Plan(reads, writes, run, answer, facts), problems


@dataclass
class ConformanceLog:
    violations: list[str] = field(default_factory=list)
    turns: dict[str, int] = field(default_factory=dict)  # role -> turns answered
    largest_result: dict[str, int] = field(default_factory=dict)  # role -> characters of its largest tool result
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)  # role -> its first request

    def note_result(self, role: str, text: str) -> None:
        self.largest_result[role] = max(self.largest_result.get(role, 0), len(text))


def snake_solution(example: Path) -> dict[str, str]:
    """The snake example's files by the path a turn writes them to (the last write of a path wins: the fix)."""
    import yaml

    data = yaml.safe_load((example / "playbook.yaml").read_text())
    out: dict[str, str] = {}
    for turn in data["turns"]:
        for action in turn.get("actions", []):
            spec = action.get("write_file")
            if spec:
                out[spec["path"]] = spec.get("content") or (example / spec["from_file"]).read_text()
    return out
