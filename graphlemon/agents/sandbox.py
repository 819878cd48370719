"""The sandbox: every path an agent names is resolved and checked here, by the tools.

Rules (docs/agents.md, "The sandbox"):

* a path is relative to the sandbox root; absolute paths, `~`, NUL bytes and any
  `..` component are refused;
* the fully resolved path (symlinks followed) must stay inside the root, for
  reads and writes alike;
* a write must match the role's glob allow-list, both as written and as resolved
  (a symlink inside `tests/` that points at `src/` is refused), and never goes
  through a symlink at all: an existing link in the repository is treated as a
  path that leaves the sandbox;
* `**` and `*` never reach `.git/` or `.graphlemon/`; only a glob that starts with
  that folder name can (the tester's `.graphlemon/units/<unit>/runs/<run>/**`).

A refusal is `GraphLemonError(SANDBOX_VIOLATION)`; the tool registry records it as
a node event and returns it to the agent as a tool error.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

from ..errors import ErrorCode, GraphLemonError
from .executor_seam import SandboxPolicy

PROTECTED_TOP = (".git", ".graphlemon")


class Sandbox:
    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy
        self.root = Path(os.path.realpath(policy.root))

    # -- public ------------------------------------------------------------------------------
    def resolve_read(self, path: str) -> Path:
        """An existing-or-not path inside the root that may be read."""
        rel = self._lexical(path)
        real = self._inside(rel, path)
        if rel.parts and rel.parts[0] == ".git":
            raise self._violation(path, "reading .git/ internals is not allowed")
        return real

    def resolve_write(self, path: str) -> Path:
        """A path the role may create or overwrite (allow-list checked as written and as resolved)."""
        rel = self._lexical(path)
        real = self._inside(rel, path)
        real_rel = real.relative_to(self.root).as_posix()
        for candidate in sorted({rel.as_posix(), real_rel}):
            if not self.is_writable(candidate):
                allowed = ", ".join(self.policy.writable) or "nothing"
                raise self._violation(path, f"{candidate!r} is outside this role's writable paths ({allowed})")
        if real_rel != rel.as_posix() and rel.as_posix() != ".":
            raise self._violation(path, f"goes through a symlink (to {real_rel!r}); writes never follow symlinks")
        return real

    def is_writable(self, rel_path: str) -> bool:
        """Does a root-relative posix path match the allow-list?"""
        return any(glob_match(pattern, rel_path) for pattern in self.policy.writable)

    def relative(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix()

    # -- internals ---------------------------------------------------------------------------
    def _lexical(self, path: str) -> PurePosixPath:
        if not isinstance(path, str) or not path.strip():
            raise self._violation(str(path), "the path is empty")
        if "\x00" in path:
            raise self._violation(path, "the path contains a NUL byte")
        text = path.strip().replace("\\", "/")
        if text.startswith("~"):
            raise self._violation(path, "a path starting with ~ (a home folder) is not allowed; use a path relative "
                                  "to the project root")  # fmt: skip
        if text.startswith("/") or re.match(r"^[A-Za-z]:/", text):
            raise self._violation(path, "absolute paths are not allowed; use a path relative to the project root")
        rel = PurePosixPath(text)
        if ".." in rel.parts:
            raise self._violation(path, "'..' is not allowed in paths")
        return PurePosixPath(*[p for p in rel.parts if p != "."]) if rel.parts else PurePosixPath(".")

    def _inside(self, rel: PurePosixPath, original: str) -> Path:
        real = Path(os.path.realpath(self.root / rel))
        if real != self.root and self.root not in real.parents:
            raise self._violation(original, f"resolves to {real}, outside the sandbox root (a symlink leaves it)")
        return real

    def _violation(self, path: str, why: str) -> GraphLemonError:
        return GraphLemonError(
            ErrorCode.SANDBOX_VIOLATION, f"sandbox: {path!r} refused: {why}", path=str(path), root=str(self.root)
        )


def glob_match(pattern: str, rel_path: str) -> bool:
    """Match a root-relative posix path: `**` any depth, `*` / `?` within one segment."""
    rel_path = rel_path.strip("/")
    if rel_path.split("/", 1)[0] in PROTECTED_TOP and not pattern.startswith(rel_path.split("/", 1)[0] + "/"):
        return False
    return _compile(pattern).fullmatch(rel_path) is not None


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    pattern = pattern.strip().strip("/")
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
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))
