"""What to run: split user targets into paths (files, folders, node ids) and name patterns.

A target whose path part (before `::`) exists inside the project is a path; an
absolute or `..` path outside the project, an option-looking target (`-x`) or a
missing file that looks like a test file is refused with INVALID_PARAM; anything
else is a name pattern (a substring of the test's name).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import invalid_param

MAX_TARGETS = 1000
MAX_TARGET_CHARS = 4096
_TEST_FILE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".go", ".rs")


@dataclass(frozen=True)
class Targets:
    paths: list[str] = field(default_factory=list)  # relative to the folder the tests run in
    patterns: list[str] = field(default_factory=list)  # name substrings

    def __bool__(self) -> bool:
        return bool(self.paths or self.patterns)


def split_targets(targets: Sequence[str], project_dir: Path, run_dir: Path) -> Targets:
    if isinstance(targets, str):
        targets = [targets]
    if len(targets) > MAX_TARGETS:
        raise invalid_param(f"too many targets ({len(targets)}, at most {MAX_TARGETS})")
    root = project_dir.resolve()
    paths: list[str] = []
    patterns: list[str] = []
    for target in targets:
        _validate(target)
        path_part, sep, rest = target.partition("::")
        resolved = _existing(path_part, root, run_dir)
        if resolved is None:
            if (
                sep
                or Path(path_part).is_absolute()
                or ".." in Path(path_part).parts
                or path_part.endswith(_TEST_FILE_SUFFIXES)
            ):
                raise invalid_param(
                    f"target {target!r}: no such file or folder in the project {project_dir}", target=target
                )
            patterns.append(target)
            continue
        if resolved != root and root not in resolved.parents:
            raise invalid_param(f"target {target!r} is outside the project {project_dir}", target=target)
        relative = os.path.relpath(resolved, run_dir.resolve())
        paths.append(relative + (sep + rest if sep else ""))
    return Targets(paths=paths, patterns=patterns)


def _validate(target: object) -> None:
    if not isinstance(target, str) or not target.strip():
        raise invalid_param("a target must be a non-empty string (file, folder, node id or name pattern)")
    if "\x00" in target or "\n" in target:
        raise invalid_param(f"target {target!r} holds a NUL or newline character")
    if len(target) > MAX_TARGET_CHARS:
        raise invalid_param(f"target is too long ({len(target)} chars, at most {MAX_TARGET_CHARS})")
    if target.startswith("-"):
        raise invalid_param(f"target {target!r} looks like an option; targets are files, folders, node ids or names")


def _existing(path_part: str, root: Path, run_dir: Path) -> Path | None:
    if not path_part:
        return None
    for base in (root, run_dir):
        candidate = base / path_part
        try:
            if candidate.exists():
                return candidate.resolve()
        except OSError:  # name too long, permission
            return None
    return None
