"""The prompt a model reads, rendered from the request it runs under (docs/agents.md "Prompts").

A role's skill (`skills/<role>.md`) holds only judgement: what good work is, the
checklists, examples. Everything a model could be told wrongly is rendered here
from the request itself, per backend, and said once:

* the system prompt = the skill and the unattended-run rules (on anthropic also the context
  rule); on claude_code also TOOLS (Claude Code's built-ins as the turn is started with them)
  and OUTPUT (the schema). On anthropic the tools and the answer's schema are the request's tool
  definitions (`submit_output` carries the schema), so the text does not repeat them. The same for
  every turn of a role, so it is prompt-cached; then the shared documents (the SDD, ...), cached
  too and the same for every unit of a task;
* the first message = this turn (ids, turn budget), SANDBOX (the writable globs),
  a compact tree of the work tree, the role's memory, the stage's context, and
  the previous attempt last.

`audit(...)` reads a rendered prompt the way a model would and lists every tool, path or field
it names that the request does not allow or provide, every output field without a description,
every enum value nothing explains, and every document the skill names that the turn does not get.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .. import beneath
from ..errors import GraphLemonError
from .context import CONTEXT_RULE
from .executor_seam import AgentRequest
from .sandbox import glob_match
from .schemas import model_schema

Backend = Literal["anthropic", "claude_code"]
SUBMIT_TOOL = "submit_output"
TREE_SKIP = frozenset({".git", ".graphlemon", "node_modules", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"})
TREE_MAX_ENTRIES = 60
CLAUDE_TOOL_TEXT = {
    "Read": "read a file with line numbers (offset / limit for long files).",
    "Glob": "find files by name pattern.",
    "Grep": "search file contents, with context lines.",
    "Write": "create or overwrite a whole file; only the SANDBOX paths.",
    "Edit": "replace an exact piece of text in a file; only the SANDBOX paths.",
    "MultiEdit": "several exact replacements in one file; only the SANDBOX paths.",
    "Bash": "run a command in the work tree, e.g. the project's tests; it cannot commit or change branches.",
    "TodoWrite": "keep a todo list for this turn (optional unless the skill asks for one).",
}
UNATTENDED = (
    "This run is unattended: nobody reads your text replies or answers questions. Decide on the most conservative "
    "reading of the documents, act with the tools, and put open questions in the output."
)
DOCUMENTS = ("SDD", "PRD", "BRD")  # the planner's documents, by the names skills use


@dataclass(frozen=True)
class RenderedPrompt:
    system: list[str]  # cacheable blocks: [skill + tools + output] then, when there are any, the shared documents
    first_message: str
    tools: list[str]  # the names the model may call (submit_output included on the anthropic backend)

    @property
    def system_text(self) -> str:
        return "\n\n".join(self.system)


def render(request: AgentRequest, backend: Backend, *, claude_tools: list[str] | None = None) -> RenderedPrompt:
    """The system blocks and first message for one turn on `backend` (`claude_tools`: the Claude Code tools the
    turn is started with, bare names)."""
    if backend == "anthropic":  # the tools and the answer's schema are the request's tool definitions
        tools = [*request.tools, SUBMIT_TOOL]
        parts = [request.system, f"# UNATTENDED\n\n{UNATTENDED}\n\n{CONTEXT_RULE}"]
    else:
        tools = list(claude_tools or [])
        parts = [request.system, _claude_tools(tools), _output_section(request), "# UNATTENDED\n\n" + UNATTENDED]
    static = "\n\n".join(part.strip() for part in parts)
    system = [static]
    if request.documents:
        docs = "\n\n".join(f"## {name}\n\n{text.strip()}" for name, text in request.documents.items())
        system.append("# SHARED DOCUMENTS\n\n(the same for every unit of this task)\n\n" + docs)
    return RenderedPrompt(system=system, first_message=_first_message(request), tools=tools)


def _claude_tools(names: list[str]) -> str:
    lines = [f"- `{n}`: {CLAUDE_TOOL_TEXT.get(n, 'a Claude Code tool.')}" for n in names]
    return "# TOOLS\n\nYou can use these Claude Code tools, and only these:\n\n" + "\n".join(lines)


def _output_section(request: AgentRequest) -> str:
    how = "Finish with your final answer as structured output matching this JSON schema (it is checked)."
    schema = json.dumps(output_schema(request), separators=(",", ":"), ensure_ascii=False)
    return f"# OUTPUT\n\n{how}\n\n```json\n{schema}\n```"


def output_schema(request: AgentRequest) -> dict[str, Any]:
    if request.output_model is None:
        return {"type": "object", "additionalProperties": True}
    return model_schema(request.output_model)


def _first_message(request: AgentRequest) -> str:
    ids = [f"role {request.role}"]
    ids += [f"{k} `{v}`" for k, v in (("unit", request.unit_id), ("run", request.run_id)) if v]
    ids.append(f"attempt {request.attempt}")
    parts = [
        "# THIS TURN\n\n"
        + ", ".join(ids)
        + f". You have at most {request.limits.max_turns} model calls for this turn; finish well before that.",
        _sandbox_section(request),
    ]
    tree = file_tree(request.workdir, request.sandbox.writable)
    if tree:
        parts.append("# FILES\n\nThe work tree (two levels; `*` marks what you may write):\n\n```\n" + tree + "\n```")
    if request.memory.strip():
        parts.append("# MEMORY\n\nLessons from earlier turns of this role:\n\n" + request.memory.strip())
    parts.append("# CONTEXT\n\n" + request.prompt.strip())
    return "\n\n".join(parts)


def _sandbox_section(request: AgentRequest) -> str:
    writable = request.sandbox.writable
    if not writable:
        return "# SANDBOX\n\nYou may read the work tree; you may not write anything in this turn."
    lines = "\n".join(f"- `{glob}`" for glob in writable)
    return (
        "# SANDBOX\n\nPaths are relative to the work tree. You may write only these (globs; `**` is any depth):\n\n"
        f"{lines}\n\nEverything else is read-only: a write elsewhere is refused and recorded against the turn."
    )


def file_tree(root: Path, writable: list[str], limit: int = TREE_MAX_ENTRIES) -> str:
    """Two levels of the work tree, folders first; a deeper folder shows its file count. `*`: writable. Read
    through the safe reader: links are neither followed nor shown."""
    root = Path(root)
    if not root.is_dir():
        return ""
    lines: list[str] = []

    def mark(rel: str) -> str:
        return " *" if any(glob_match(g, rel) for g in writable) else ""

    def entries(folder: str) -> list[beneath.Entry]:
        try:
            items = [e for e in beneath.entries(root, folder) if e.name not in TREE_SKIP and e.kind in ("dir", "file")]
        except (OSError, GraphLemonError):
            return []
        return sorted(items, key=lambda e: (e.kind != "dir", e.name))

    for top in entries(""):
        if len(lines) >= limit:
            lines.append("… (more; list a folder to see it)")
            break
        if top.kind != "dir":
            lines.append(top.name + mark(top.name))
            continue
        lines.append(top.name + "/")
        for child in entries(top.name):
            rel = f"{top.name}/{child.name}"
            if child.kind == "dir":
                count = beneath.count_files(root, rel)
                lines.append(f"  {child.name}/ ({count} files)" + (" *" if mark(rel + "/x") else ""))
            else:
                lines.append(f"  {child.name}" + mark(rel))
    return "\n".join(lines + _hidden_writable(writable))


def _hidden_writable(writable: list[str]) -> list[str]:
    """Writable folders the tree leaves out (under `.graphlemon/`, say), each as one line with its path."""
    out = []
    for glob in writable:
        parts = glob.split("/")
        fixed = parts[: next((i for i, p in enumerate(parts) if any(ch in p for ch in "*?[")), len(parts))]
        if fixed and any(part in TREE_SKIP for part in fixed):
            out.append("/".join(fixed) + ("/ *" if len(fixed) < len(parts) else " *"))
    return list(dict.fromkeys(out))


# -- the audit: what a model reading this prompt would be told that is not true ---------------------------

_FENCE = re.compile(r"```.*?```", re.S)
_MEMORY = re.compile(r"^# MEMORY\n.*?(?=^# CONTEXT\n)", re.S | re.M)
_TICKED = re.compile(r"`([^`\n]+)`")
_PATHLIKE = re.compile(r"^[\w.*?\[\]/-]+$")
_EXTENSION = re.compile(r"\.[A-Za-z]{1,5}$")
_FIELD = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")


def audit(rendered: RenderedPrompt, request: AgentRequest, backend: Backend) -> list[str]:
    """Every tool, path or output field the prompt names that this turn does not have, and what it leaves
    unexplained (`meaning_problems`); [] when it is true. The project's own texts (the shared documents, the role's
    memory) are the project's words, not the harness's: they are not audited."""
    from .tools import tool_names

    harness = [rendered.system[0], _MEMORY.sub("", rendered.first_message)]
    text = _FENCE.sub(" ", "\n\n".join(harness))
    available = set(rendered.tools)
    registry = set(tool_names()) | {SUBMIT_TOOL}
    fields = _schema_words(output_schema(request))
    problems: list[str] = []
    for name in sorted(registry - available):
        if re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])", text):
            problems.append(f"names the tool {name!r}, which this {backend} turn does not have")
    for token in sorted(set(_TICKED.findall(text))):
        token = token.strip()
        if token in available or token in registry:
            continue
        if token in CLAUDE_TOOL_TEXT:
            problems.append(f"names the Claude Code tool {token!r}, which this {backend} turn does not have")
        elif _is_path(token):
            problem = _path_problem(token, request)
            if problem:
                problems.append(problem)
        elif _FIELD.match(token) and token not in fields:
            problems.append(f"names {token!r}, which is neither a tool of this turn nor a field of its output")
    return problems + meaning_problems(request)


def meaning_problems(request: AgentRequest) -> list[str]:
    """What the prompt leaves unexplained: an output field with no description the skill does not name either, an
    enum value neither the skill nor its field's description names, a document the skill names (SDD, PRD, BRD)
    that the turn neither receives (a shared document, a context section) nor writes (a `<name>.md` it is told of)."""
    schema = output_schema(request)
    skill = request.system
    problems = []
    for path, prop, enum_text in _fields(schema, schema):
        name = path.rsplit(".", 1)[-1].removesuffix("[]")
        if not prop.get("description") and not _names(skill, name):
            problems.append(f"the output field {path!r} has no description and the skill does not explain it")
        for value in _enum_values(prop, schema):
            if not (_names(skill, value) or _names(enum_text, value)):
                problems.append(f"the output field {path!r} allows {value!r}, which nothing in the prompt explains")
    for name in DOCUMENTS:
        if _names(skill, name) and not _receives(request, name):
            problems.append(f"the skill names the {name}, which this turn neither receives nor writes")
    return problems


def _names(text: str, word: str) -> bool:
    return bool(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text or ""))


def _receives(request: AgentRequest, name: str) -> bool:
    if any(_names(title, name) for title in request.documents):
        return True
    headings = re.findall(r"^#+ (.+)$", request.prompt, re.M)
    return any(_names(h, name) for h in headings) or f"{name.lower()}.md" in request.prompt


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return {**root.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {}), **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _fields(schema: dict[str, Any], root: dict[str, Any], prefix: str = "", seen: frozenset = frozenset()):
    """(path, property schema, the text that may explain its enum values) for every property at any depth."""
    for name, prop in (schema.get("properties") or {}).items():
        path = f"{prefix}{name}"
        yield path, prop, " ".join(str(_resolve(p, root).get("description", "")) for p in _variants(prop, root))
        for variant in _variants(prop, root):
            ref = variant.get("$ref") or ""
            target = _resolve(variant, root)
            if ref in seen:
                continue
            if target.get("type") == "array" and isinstance(target.get("items"), dict):
                item = _resolve(target["items"], root)
                yield from _fields(item, root, f"{path}[].", seen | {ref, target["items"].get("$ref", "")})
            else:
                yield from _fields(target, root, f"{path}.", seen | {ref})


def _variants(prop: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    options = prop.get("anyOf") or prop.get("oneOf")
    return [prop, *options] if isinstance(options, list) else [prop]


def _enum_values(prop: dict[str, Any], root: dict[str, Any]) -> list[str]:
    values: list[str] = []
    for variant in _variants(prop, root):
        target = _resolve(variant, root)
        if target.get("type") == "array" and isinstance(target.get("items"), dict):
            target = _resolve(target["items"], root)
        values += [v for v in target.get("enum") or [] if isinstance(v, str)]
    return list(dict.fromkeys(values))


def _is_path(token: str) -> bool:
    return bool(_PATHLIKE.match(token)) and ("/" in token or bool(_EXTENSION.search(token))) and "(" not in token


def _path_problem(token: str, request: AgentRequest) -> str | None:
    writable = request.sandbox.writable
    if token in writable or any(glob_match(g, token.rstrip("/")) for g in writable):
        return None
    if any(ch in token for ch in "*?["):
        return f"names the glob {token!r}, which is not one of this turn's writable globs"
    root = Path(request.workdir)
    target = Path(os.path.realpath(root / token))
    if ".." not in Path(token).parts and (target == root or root.resolve() in target.parents) and target.exists():
        return None
    return f"names the path {token!r}, which neither exists in the work tree nor is writable"


def _schema_words(schema: Any) -> set[str]:
    """Every property name and enum value anywhere in a JSON schema."""
    words: set[str] = set()
    if isinstance(schema, dict):
        words |= set((schema.get("properties") or {}).keys())
        words |= {str(v) for v in schema.get("enum") or []}
        if "const" in schema:
            words.add(str(schema["const"]))
        for value in schema.values():
            words |= _schema_words(value)
    elif isinstance(schema, list):
        for value in schema:
            words |= _schema_words(value)
    return words
