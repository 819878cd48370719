"""Agent-state tools: write_todolist, update_todo_item, timeline_append, record_memory."""

from __future__ import annotations

import json
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...errors import invalid_param
from ...models import TimelineEvent
from ..memory import MemoryEntry, append_memory
from ..tool_context import ToolContext
from .registry import tool

TodoStatus = Literal["pending", "in_progress", "done", "skipped"]


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default="", description="e.g. step-001; assigned when empty.")
    title: str = Field(min_length=1, max_length=500)
    status: TodoStatus = "pending"


class WriteTodolistArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[TodoItem] = Field(min_length=1, max_length=100)


def todo_path(ctx: ToolContext):
    return ctx.state_dir / "agent-state" / ctx.node_exec_id / f"{ctx.role}-todo.json"


def read_todolist(ctx: ToolContext) -> list[TodoItem]:
    path = todo_path(ctx)
    if not path.exists():
        return []
    return [TodoItem.model_validate(i) for i in json.loads(path.read_text(encoding="utf-8"))]


def save_todolist(ctx: ToolContext, items: list[TodoItem]) -> None:
    """Replace the turn's todo list (ids assigned when empty)."""
    items = [i.model_copy(update={"id": i.id or f"step-{n:03d}"}) for n, i in enumerate(items, 1)]
    path = todo_path(ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([i.model_dump() for i in items], ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


@tool(
    "write_todolist",
    "Write this turn's todo list, replacing any earlier one; ids (step-001, ...) are given to items without one. "
    "Use it when the skill asks for a list its check reads, or to plan a long turn. Mark items done with "
    "update_todo_item as you finish them.",
)
def write_todolist(ctx: ToolContext, args: WriteTodolistArgs) -> dict:
    items = [i.model_copy(update={"id": i.id or f"step-{n:03d}"}) for n, i in enumerate(args.items, 1)]
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise invalid_param("write_todolist: item ids must be unique")
    save_todolist(ctx, items)
    return {"items": [i.model_dump() for i in items]}


class UpdateTodoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    status: TodoStatus


@tool(
    "update_todo_item",
    "Set the status of one item of this turn's todo list (pending, in_progress, done, skipped). The result says "
    "how many items are still pending. It fails, naming the ids, when there is no list or no such item.",
)
def update_todo_item(ctx: ToolContext, args: UpdateTodoArgs) -> dict:
    items = read_todolist(ctx)
    if not items:
        raise invalid_param("update_todo_item: there is no todo list yet; call write_todolist first")
    for i, item in enumerate(items):
        if item.id == args.id:
            items[i] = item.model_copy(update={"status": args.status})
            save_todolist(ctx, items)
            return {"id": args.id, "status": args.status, "remaining": sum(x.status == "pending" for x in items)}
    raise invalid_param(f"update_todo_item: no item {args.id!r}; ids: {', '.join(x.id for x in items)}")


class TimelineArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    event: str = Field(pattern=r"^[a-z][a-z0-9_]{1,40}$", description="e.g. unit_tested, test_failed, test_passed")
    ref: str | None = None
    summary: str = Field(default="", max_length=2000)


@tool(
    "timeline_append",
    "Add a human-readable milestone to the task's timeline (an event name such as unit_tested, a reference and a "
    "one-line summary). The stages already record their own milestones; use it only for something a person "
    "following the task should see. The event name is lower_snake_case.",
)
def timeline_append(ctx: ToolContext, args: TimelineArgs) -> dict:
    ctx.ledger.append(
        TimelineEvent(event=args.event, task_id=ctx.task_id, unit_id=ctx.unit_id, ref=args.ref, summary=args.summary)
    )
    return {"event": args.event}


class RecordMemoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=200)
    content: str = Field(min_length=1, max_length=4000)
    relevance: float = Field(default=0.5, ge=0, le=1)


@tool(
    "record_memory",
    "Keep a lesson for this role's later turns, in any unit or task (shown under MEMORY): a topic and a few "
    "sentences; a topic's latest entry replaces earlier ones. Record what would have saved you time (a test "
    "command, a framework's quirk), not this unit's facts.",
)
def record_memory(ctx: ToolContext, args: RecordMemoryArgs) -> dict:
    entry = MemoryEntry(topic=args.topic, content=args.content, relevance=args.relevance, by=ctx.node_exec_id)
    append_memory(ctx.state_dir, ctx.role, entry)
    return {"topic": args.topic}
