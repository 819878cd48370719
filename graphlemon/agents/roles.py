"""Each role's defaults: the tools it gets and where it may write (docs/agents.md).

`{unit_id}` and `{run_id}` in a glob are filled from the turn; a glob that still
needs a missing id is dropped (a tester with no run id gets no runs folder).
Stages may pass their own allow-list (the tester: a unit's declared test paths).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

READ_TOOLS = ["read_file", "list_files", "search_text"]
WRITE_TOOLS = ["write_file", "edit_file", "apply_patch"]
STATE_TOOLS = ["write_todolist", "update_todo_item", "timeline_append", "record_memory"]
BUG_TOOLS = ["bug_open", "bug_transition", "bug_list"]


class RoleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str
    tools: tuple[str, ...]
    writable: tuple[str, ...]
    claude_tools: tuple[str, ...]  # Claude Code built-ins the claude_code backend may use


# Each role gets the tools its work needs and no more: the stages open and move bugs, write the run's result
# files and triage.json themselves, so no role is asked to do that bookkeeping again.
ROLES: dict[str, RoleSpec] = {
    spec.role: spec
    for spec in (
        RoleSpec(
            role="planner",
            tools=(*READ_TOOLS, "write_file", "edit_file", "record_memory"),
            writable=(".graphlemon/plan/drafts/**",),
            claude_tools=("Read", "Glob", "Grep", "Write", "Edit"),
        ),
        RoleSpec(
            role="coder",
            tools=(*READ_TOOLS, *WRITE_TOOLS, "run_tests", "record_memory"),
            writable=("**",),
            claude_tools=("Read", "Glob", "Grep", "Write", "Edit", "MultiEdit", "Bash"),
        ),
        RoleSpec(  # a todo list is optional for it; its self-check reads one if it keeps one
            role="tester",
            tools=(*READ_TOOLS, "write_file", "edit_file", "run_tests", "write_todolist", "update_todo_item",
                   "record_memory"),  # fmt: skip
            writable=("tests/**",),
            claude_tools=("Read", "Glob", "Grep", "Write", "Edit", "Bash"),
        ),
        RoleSpec(
            role="integrator",
            tools=(*READ_TOOLS, "write_file", "edit_file", "run_tests", "record_memory"),
            writable=("tests/integration/**",),
            claude_tools=("Read", "Glob", "Grep", "Write", "Edit", "Bash"),
        ),
        RoleSpec(  # its self-check reads the todo list, so it keeps the todo tools
            role="bug-triager",
            tools=(*READ_TOOLS, "extract_evidence", "bug_list", "write_todolist", "update_todo_item", "record_memory"),
            writable=(),
            claude_tools=("Read", "Glob", "Grep"),
        ),
        RoleSpec(
            role="validator",
            tools=(*READ_TOOLS, "run_tests", "extract_evidence", "bug_list", "record_memory"),
            writable=(),
            claude_tools=("Read", "Glob", "Grep", "Bash"),
        ),
        RoleSpec(  # REQ-08: reads the bug's evidence and the skill, answers with the new text (it writes nothing)
            role="skill-editor",
            tools=tuple(READ_TOOLS),
            writable=(),
            claude_tools=("Read", "Glob", "Grep"),
        ),
    )
}


def role_spec(role: str) -> RoleSpec:
    from ..errors import invalid_param

    try:
        return ROLES[role]
    except KeyError:
        raise invalid_param(f"unknown role {role!r}; choose one of: {', '.join(ROLES)}") from None


def writable_globs(role: str, *, unit_id: str | None, run_id: str | None) -> list[str]:
    """The role's allow-list with ids filled in; globs needing a missing id are dropped."""
    ids = {"unit_id": unit_id, "run_id": run_id}
    out = []
    for glob in role_spec(role).writable:
        needed = [k for k in ids if "{" + k + "}" in glob]
        if any(not ids[k] for k in needed):
            continue
        for k in needed:
            glob = glob.replace("{" + k + "}", str(ids[k]))
        out.append(glob)
    return out
