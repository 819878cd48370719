"""Role memory under `.graphlemon/memory/<role>/`: what a role learnt, carried to its next turns.

Agents add lessons with the `record_memory` tool (appended to `memories.ndjson`,
the latest entry per topic wins); people may drop curated `*.md` notes in the
same folder. At the start of a turn the memory is injected into the skill as a
`## Memory` section, most relevant first, within a character budget.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..models import utcnow

MEMORY_FILE = "memories.ndjson"


class MemoryEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=200)
    content: str = Field(min_length=1, max_length=4000)
    relevance: float = Field(default=0.5, ge=0, le=1)
    by: str | None = None
    ts: str = Field(default_factory=lambda: utcnow().isoformat())


def memory_dir(state_dir: Path, role: str) -> Path:
    return state_dir / "memory" / role


def append_memory(state_dir: Path, role: str, entry: MemoryEntry) -> Path:
    folder = memory_dir(state_dir, role)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MEMORY_FILE
    line = (entry.model_dump_json() + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def load_memory(state_dir: Path, role: str) -> list[MemoryEntry]:
    """Latest entry per topic (unparseable lines are skipped: memory is advisory, not state)."""
    path = memory_dir(state_dir, role) / MEMORY_FILE
    latest: dict[str, MemoryEntry] = {}
    if path.exists():
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = MemoryEntry.model_validate(json.loads(raw))
            except (ValueError, ValidationError):
                continue
            latest[entry.topic] = entry
    return sorted(latest.values(), key=lambda e: (-e.relevance, e.topic))


def render_memory(state_dir: Path, role: str, max_chars: int = 6000) -> str:
    """The `## Memory` section body, or '' when the role has none."""
    folder = memory_dir(state_dir, role)
    parts: list[str] = []
    for note in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        parts.append(note.read_text(encoding="utf-8", errors="replace").strip())
    parts.extend(f"- **{e.topic}** (relevance {e.relevance:.1f}): {e.content}" for e in load_memory(state_dir, role))
    text, used = [], 0
    for part in parts:
        if used + len(part) > max_chars:
            text.append("- (more memory omitted)")
            break
        text.append(part)
        used += len(part) + 1
    return "\n".join(text)
