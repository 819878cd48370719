"""The scripted playbook (YAML): what each role does, keyed by role / unit / attempt.

```yaml
version: 1
turns:
  - name: tester writes a failing test          # optional, shown in errors and transcripts
    match: {role: tester, unit: snake-core, attempt: 1}   # unit / attempt / task optional (= any)
    usage: {input_tokens: 1200, output_tokens: 300}       # optional simulated usage
    actions:
      - write_file: {path: tests/test_snake.py, from_file: files/test_snake.py}  # or content: "..."
      - edit_file: {path: tests/test_snake.py, old: "a", new: "b"}
      - patch: |                                           # a unified diff (or {from_file: x.diff})
          --- a/tests/x.py ...
      - tool: run_tests                                    # any registered tool
        args: {targets: [tests/test_snake.py]}
        save_as: run                                       # later steps may use ${run.summary.failed}
        expect: ok                                         # ok | error: assert the outcome
    output: {ok: false, failed: "${run.summary.failed}"}
  - match: {role: coder}
    raise: {error: quota_exceeded, limit_type: session, resets_in_s: 60}
    times: 1                                               # usable once, then later turns match
```

The most specific matching turn wins (task > unit > a single attempt > a list of
attempts; ties: the first in the file). No match is
an INVALID_PARAM error naming role, unit and attempt.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..inputs import read_text_input
from ..models import QuotaLimitType, Stage

ACTION_TOOLS = {"write_file": "write_file", "edit_file": "edit_file", "patch": "apply_patch"}
MAX_PLAYBOOK_BYTES = 10_000_000
MAX_EXPANDED_BYTES = 20_000_000  # the playbook with every YAML alias written out (a text measure, roughly JSON size)


def check_expanded_size(data: Any, source: str, limit: int = MAX_EXPANDED_BYTES) -> int:
    """The size of `data` with its YAML aliases expanded (shared nodes counted once per use, in O(nodes)).
    Nested aliases can make a few hundred bytes of YAML expand to gigabytes ("billion laughs") in every
    transcript and output that copies them: over `limit`, or a recursive alias, is INVALID_PARAM."""
    sizes: dict[int, int] = {}
    open_ids: set[int] = set()

    def size(node: Any) -> int:
        if isinstance(node, dict | list):
            key = id(node)
            if key in sizes:
                return sizes[key]
            if key in open_ids:
                raise invalid_param(f"playbook {source}: a YAML alias refers to itself (a recursive structure)")
            open_ids.add(key)
            items = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            total = 2
            for item in items:
                total += size(item) + 2
                if total > limit:
                    break
            open_ids.discard(key)
            sizes[key] = total
            return total
        return len(node) if isinstance(node, str | bytes) else 8

    total = size(data)
    if total > limit:
        raise invalid_param(
            f"playbook {source}: with its YAML aliases expanded it is over {limit} bytes; write the content out "
            "(or use from_file) instead of nesting aliases"
        )
    return total


class TurnMatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Stage
    unit: str | None = None
    attempt: int | list[int] | None = None
    task: str | None = None

    def matches(self, role: str, unit: str | None, attempt: int, task: str | None) -> bool:
        if self.role != role or (self.unit is not None and self.unit != unit):
            return False
        if self.task is not None and self.task != task:
            return False
        if self.attempt is None:
            return True
        return attempt in (self.attempt if isinstance(self.attempt, list) else [self.attempt])

    @property
    def specificity(self) -> int:
        """task > unit > one attempt > a list of attempts > role only."""
        attempt = 0 if self.attempt is None else 1 if isinstance(self.attempt, list) else 2
        return 8 * (self.task is not None) + 4 * (self.unit is not None) + attempt

    def describe(self) -> str:
        parts = [f"role={self.role}"] + [
            f"{k}={v}"
            for k, v in (("unit", self.unit), ("attempt", self.attempt), ("task", self.task))
            if v is not None
        ]
        return " ".join(parts)


class Action(BaseModel):
    """One tool call. The shorthands write_file / edit_file / patch become tool calls."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    save_as: str | None = Field(default=None, pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    expect: Literal["ok", "error"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("an action is a mapping such as {write_file: {...}} or {tool: NAME, args: {...}}")
        short = [k for k in ACTION_TOOLS if k in data]
        if len(short) > 1 or (short and "tool" in data):
            raise ValueError(f"an action names one tool, got {sorted(data)}")
        if not short:
            return data
        key = short[0]
        args = data[key]
        if key == "patch" and isinstance(args, str):
            args = {"diff": args}
        if not isinstance(args, dict):
            raise ValueError(f"{key}: expected a mapping of arguments")
        rest = {k: v for k, v in data.items() if k != key}
        return {"tool": ACTION_TOOLS[key], "args": args, **rest}


class UsageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)


class RaiseSpec(BaseModel):
    """Simulate a terminal executor condition (for loop tests without a model)."""

    model_config = ConfigDict(extra="forbid")

    error: Literal["quota_exceeded", "classifier_blocked", "executor_error"]
    limit_type: QuotaLimitType = "session"
    resets_in_s: float | None = None
    message: str | None = None


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = None
    match: TurnMatch
    actions: list[Action] = Field(default_factory=list)
    output: dict[str, Any] | None = None
    usage: UsageSpec | None = None
    raise_: RaiseSpec | None = Field(default=None, alias="raise")
    times: int | None = Field(default=None, ge=1)

    def label(self, index: int) -> str:
        return self.name or f"turn #{index + 1} ({self.match.describe()})"


class Playbook(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    turns: list[Turn] = Field(min_length=1)
    # files the target repository must hold: a replayed story fits only the repository it was written for
    fits: list[str] = Field(default_factory=list, max_length=100)
    source: str = "<memory>"

    @field_validator("fits")
    @classmethod
    def _relative(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path.strip() or Path(path).is_absolute() or ".." in Path(path).parts:
                raise ValueError(f"{path!r} must be a path inside the repository (relative, no '..')")
        return paths

    def check_fits(self, root: Path) -> None:
        """INVALID_PARAM when the repository at `root` lacks a file this replay was written against (a scripted
        story replayed on another repository would write its files there and merge them)."""
        missing = [path for path in self.fits if not (root / path).exists()]
        if missing:
            raise invalid_param(
                f"playbook {self.source} replays a scripted story written for another repository: {root} has no "
                f"{', '.join(missing[:3])}. A scripted playbook fits only the repository it was written for (a copy of "
                "its example's repo); on your own repository use --executor anthropic or claude_code",
                path=str(root), missing=missing[:10],
            )  # fmt: skip

    @classmethod
    def load(cls, path: Path | str) -> Playbook:
        path = Path(path)
        if path.is_file() and path.stat().st_size > MAX_PLAYBOOK_BYTES:
            raise invalid_param(f"playbook {path} is larger than {MAX_PLAYBOOK_BYTES} bytes", path=str(path))
        text = read_text_input(path, "playbook")  # INVALID_PARAM: missing, a folder, unreadable, not UTF-8
        try:
            data = yaml.safe_load(text)
            check_expanded_size(data, str(path))
        except yaml.YAMLError as exc:
            raise invalid_param(f"playbook {path}: not valid YAML: {exc}", path=str(path)) from None
        except RecursionError:
            raise invalid_param(f"playbook {path}: nested too deeply", path=str(path)) from None
        return cls.from_data(data, base_dir=path.resolve().parent, source=str(path))

    @classmethod
    def from_data(cls, data: Any, *, base_dir: Path | None = None, source: str = "<memory>") -> Playbook:
        if not isinstance(data, dict):
            raise invalid_param(f"playbook {source}: expected a mapping with 'turns'")
        try:
            book = cls.model_validate({**data, "source": source})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise invalid_param(f"playbook {source}: {where}: {first.get('msg')}") from None
        for turn in book.turns:
            for action in turn.actions:
                _inline_source(action, base_dir, source)
        return book

    def select(
        self, role: str, unit: str | None, attempt: int, task: str | None, used: dict[int, int]
    ) -> tuple[int, Turn]:
        candidates = [
            (i, t)
            for i, t in enumerate(self.turns)
            if t.match.matches(role, unit, attempt, task) and (t.times is None or used.get(i, 0) < t.times)
        ]
        if not candidates:
            known = [t.match.describe() for t in self.turns if t.match.role == role]
            hint = f"; turns for {role}: {', '.join(known)}" if known else f"; it has no turn for role {role}"
            raise invalid_param(
                f"playbook {self.source}: no turn matches role={role} unit={unit} attempt={attempt}{hint}",
                role=role,
                unit_id=unit,
                attempt=attempt,
            )
        best = max(t.match.specificity for _, t in candidates)
        return next((i, t) for i, t in candidates if t.match.specificity == best)


def _inline_source(action: Action, base_dir: Path | None, source: str) -> None:
    """`from_file: path` (relative to the playbook) becomes the content / diff argument."""
    ref = action.args.pop("from_file", None)
    if ref is None:
        return
    key = "diff" if action.tool == "apply_patch" else "content"
    if key in action.args:
        raise invalid_param(f"playbook {source}: {action.tool} has both 'from_file' and '{key}'")
    if base_dir is None or Path(str(ref)).is_absolute() or ".." in Path(str(ref)).parts:
        raise invalid_param(f"playbook {source}: from_file {ref!r} must be a path relative to the playbook")
    action.args[key] = read_text_input(base_dir / str(ref), f"playbook {source}: from_file")


# -- ${...} references -------------------------------------------------------------------------

_REF = re.compile(r"\$\{([^}]+)\}")


def substitute(value: Any, scope: dict[str, Any], where: str) -> Any:
    """Replace `${name.path}` in strings (a whole-string reference keeps its type); `$${` is a literal `${`."""
    if isinstance(value, dict):
        return {k: substitute(v, scope, where) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, scope, where) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    if value.startswith("${") and value.endswith("}") and _REF.fullmatch(value):
        return _lookup(value[2:-1], scope, where)
    escaped = value.replace("$${", "\x00")
    text = _REF.sub(lambda m: str(_lookup(m.group(1), scope, where)), escaped)
    return text.replace("\x00", "${")


def _lookup(ref: str, scope: dict[str, Any], where: str) -> Any:
    parts = ref.strip().split(".")
    current: Any = scope
    for i, part in enumerate(parts):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            known = ", ".join(sorted(current)) if isinstance(current, dict) else type(current).__name__
            raise GraphLemonError(
                ErrorCode.INVALID_PARAM,
                f"{where}: ${{{ref}}}: no '{part}' in {'.'.join(parts[:i]) or 'the scope'} (has: {known})",
            )
    return current
