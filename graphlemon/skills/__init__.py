"""Role skills: one markdown prompt per role (`<role>.md` beside this file), rendered per turn.

These are the built-in skills. A project's own skills live in its skills repository
(`.graphlemon/skills/`, a git repository seeded from these; see `repo.py`), and the loop
renders them from the commit its task pinned (REQ-08, `iteration.py`).

`{{name}}` placeholders are filled from the turn's variables (unit_id, run_id,
mode, ...); a placeholder with no value renders as `(not given)`. The role's
memory is appended as a `## Memory` section when the turn is built (the skill file itself
never holds it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import invalid_param

SKILLS_DIR = Path(__file__).resolve().parent
ROLES = ("planner", "coder", "tester", "integrator", "bug-triager", "validator", "skill-editor")
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


def skill_path(role: str, skills_dir: Path | None = None) -> Path:
    if role not in ROLES:
        raise invalid_param(f"unknown role {role!r}; choose one of: {', '.join(ROLES)}")
    return (skills_dir or SKILLS_DIR) / f"{role}.md"


def load_skill(role: str, skills_dir: Path | None = None) -> str:
    path = skill_path(role, skills_dir)
    if not path.is_file():
        raise invalid_param(f"no skill file for role {role!r} at {path}")
    return path.read_text(encoding="utf-8")


def render_skill(
    role: str, variables: Mapping[str, object] | None = None, *, memory: str = "", skills_dir: Path | None = None
) -> str:
    return render_text(load_skill(role, skills_dir), variables, memory=memory)


def render_text(skill: str, variables: Mapping[str, object] | None = None, *, memory: str = "") -> str:
    """A skill's text with its placeholders filled and the role's memory appended."""
    values = {k: v for k, v in (variables or {}).items() if v is not None}
    text = _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), "(not given)")), skill)
    if memory.strip():
        text = text.rstrip() + "\n\n## Memory\n\n" + memory.strip() + "\n"
    return text
