"""apply_patch: a unified diff applied with `git apply` in the sandbox root, checked before and judged after."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from ... import gitrun
from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..tool_context import ToolContext
from .fs_guard import ToolArgs, judged
from .registry import tool


class ApplyPatchArgs(ToolArgs):
    diff: str = Field(min_length=1, description="A unified diff (git diff format, paths a/... b/...).")


@tool(
    "apply_patch",
    "Apply a unified diff in git's format (`--- a/path`, `+++ b/path`, `@@` hunks) inside this turn's writable "
    "paths, for several related changes at once. The whole diff applies or nothing does: context that does not "
    "match, or headers without a/ and b/, is a format error naming the problem. A path outside the writable paths "
    "is refused and recorded.",
)
def apply_patch(ctx: ToolContext, args: ApplyPatchArgs) -> dict:
    diff = args.diff if args.diff.endswith("\n") else args.diff + "\n"
    _check_headers(diff)
    touched = patch_effects(diff, ctx.sandbox.root)
    if not touched.paths:
        raise invalid_param("apply_patch: the diff changes no file")
    _check_patch(ctx, touched)
    with judged(ctx, "apply_patch"):
        _git_apply(ctx.sandbox.root, diff)
    ctx.files_changed.update(touched.paths)
    return {"files": touched.paths}


def _check_headers(diff: str) -> None:
    """A unified diff's file header lines (`--- ` / `+++ `) name a/ and b/ paths (or /dev/null), as git diff writes
    them; without the prefixes git would strip a real folder off each path. That is a format error, said as one."""
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].split("\t", 1)[0].strip().strip('"')
            if name != "/dev/null" and not name.startswith(("a/", "b/")):
                raise invalid_param(
                    f"apply_patch: format error: the header {line.strip()!r} needs the a/ or b/ prefix "
                    f"(--- a/{name}, +++ b/{name}), as git diff writes it"
                )


@dataclass
class PatchEffects:
    """What `git apply` itself says a diff would do (never a header parser of ours)."""

    paths: list[str] = field(default_factory=list)  # every path created, changed, renamed from/to or deleted
    binary: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)  # git's summary lines that set a mode ("create mode 100755 x")


def patch_effects(diff: str, root: Path) -> PatchEffects:
    """Ask `git apply --numstat --summary` which paths the diff touches, which are binary, which modes it sets."""
    numstat = _git_apply(root, diff, "--numstat", "-z").split("\0")
    out, i = PatchEffects(), 0
    while i < len(numstat):
        entry = numstat[i]
        i += 1
        if not entry.strip():
            continue
        added, deleted, path = (entry.split("\t", 2) + ["", ""])[:3]
        names = [path] if path else numstat[i : i + 2]  # a rename/copy: the two names follow
        i += 0 if path else 2
        for name in names:
            if name and name not in out.paths:
                out.paths.append(name)
            if added == "-" and deleted == "-" and name and name not in out.binary:
                out.binary.append(name)
    for line in _git_apply(root, diff, "--summary").splitlines():
        line = line.strip()
        if line.startswith(("create mode", "delete mode", "mode change")):
            out.modes.append(line)
    return out


def _check_patch(ctx: ToolContext, touched: PatchEffects) -> None:
    policy = ctx.sandbox.policy
    for path in touched.paths:
        ctx.sandbox.resolve_write(path)
        if os.path.islink(ctx.sandbox.root / path):
            raise _refused(path, "is a symlink; an existing link is treated as a path that leaves the sandbox")
    for line in touched.modes:
        if " 120000 " in f" {line} ":
            raise _refused(line.rsplit(" ", 1)[-1], f"patches may not create or change symlinks ({line})")
        if line.startswith("mode change") and not policy.allow_mode_change:
            raise _refused(line.rsplit(" ", 1)[-1], f"this role may not change file modes ({line})")
        if line.startswith("create mode 100755") and not policy.allow_mode_change:
            raise _refused(line.rsplit(" ", 1)[-1], f"this role may not create executable files ({line})")
    if touched.binary and not policy.allow_binary:
        raise _refused(touched.binary[0], f"binary patches are not allowed for this role ({', '.join(touched.binary)})")


def _refused(path: str, why: str) -> GraphLemonError:
    return GraphLemonError(ErrorCode.SANDBOX_VIOLATION, f"sandbox: apply_patch refused: {path!r} {why}", path=path)


def _git_apply(root: Path, diff: str, *options: str) -> str:
    """`git apply` in the sandbox root (never a repository above it); options like --numstat only report."""
    ceiling = {"GIT_CEILING_DIRECTORIES": str(root.parent)}  # paths are relative to the sandbox root
    proc = gitrun.git(root, "apply", "--whitespace=nowarn", *options, "-", input=diff.encode("utf-8"), check=False,
                      env=ceiling, timeout=60)  # fmt: skip
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", errors="replace").strip()[:2000]
        raise invalid_param(f"apply_patch: the diff does not apply: {detail}")
    return proc.stdout.decode("utf-8", errors="surrogateescape")

