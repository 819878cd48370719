"""What a Claude Code turn may change in git besides work-tree files, and how it is put back.

`git status` alone misses three kinds of change: a commit (HEAD moves, the work
tree is clean again), a new ignore rule (a `.gitignore` with `*` hides every new
file, itself included) and git's own control files (refs, the index, config,
hooks). `capture(root)` records, before the turn: HEAD (the branch it names and
its commit), every ref, the index (its bytes and its entries with their flags),
git's control files (config, `info/exclude`, `info/attributes`, hooks), the
state of an unfinished merge/rebase/cherry-pick, and every file git ignores
(name, kind, size, mtime, and the bytes of small ones). After the turn:

* `restore_git(before)` puts all of that back and returns one `GitFinding` per
  thing that had changed: `git_control` (config/hooks/exclude; restored first,
  so no planted fsmonitor or hook runs in the checks that follow),
  `git_operation` (merge/rebase state left behind: removed), `git_commit` (HEAD
  or its branch moved: both set back and the old index restored, so the commit's
  changes become work-tree changes judged path by path, like `git reset --mixed`),
  `git_ref` (a branch, tag, stash or other ref created, moved or deleted: deleted
  or set back), `git_index` (assume-unchanged / skip-worktree flags or conflict
  entries that would hide changes: the old index is restored).
* `git_ignored.judge_ignored(before, sandbox)` judges the files git ignores.

Not judged: branches checked out in another worktree (the other units and the
person move those while this turn runs; git itself refuses `branch -f` on them)
and `.graphlemon/` (the loop's own state). Claude Code is also told not to run
`git commit`/`push`/`reset`/... (`claude_code.GIT_DENY_RULES`); this module is the
guarantee when a command slips past those rules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import beneath
from ..errors import GraphLemonError
from .effects import _git
from .kept_files import Keeper, KeptState

FindingKind = Literal[
    "git_commit", "git_ref", "git_index", "git_control", "git_operation", "ignored_file", "ignore_rule"
]  # fmt: skip
OP_STATE = (
    "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
    "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK",
    "rebase-merge", "rebase-apply", "sequencer", "index.lock", "HEAD.lock",
)  # fmt: skip
CONTROL_FILES = ("config", "config.worktree", "info/exclude", "info/attributes", "info/sparse-checkout")
SKIPPED_TOP = (".git", ".graphlemon")
MAX_KEPT_FILE = 1_000_000  # bytes of one ignored file kept to put it back
MAX_KEPT_TOTAL = 32_000_000  # bytes of all ignored files kept per turn
MAX_KEPT_TREE = 500  # ignored files under one top-level folder beyond which none of its bytes are kept


@dataclass(frozen=True)
class GitFinding:
    kind: FindingKind
    name: str  # a ref, a path under the git folder, or a work-tree path
    why: str


@dataclass
class GitState:
    root: Path
    git_dir: Path
    common_dir: Path
    head_ref: str | None  # "refs/heads/x"; None when detached or unborn
    head: str | None  # HEAD's commit; None when unborn
    refs: dict[str, str]  # refname -> commit, or "ref: <target>" for a symbolic ref
    others: set[str]  # branches checked out in another worktree
    index: bytes | None
    entries: bytes  # `git ls-files -s -v`: entries with their flags
    control: dict[str, bytes | None]  # absolute path -> bytes (None: absent)
    op_state: set[str]
    ignored: dict[str, KeptState] = field(default_factory=dict)
    rules: dict[str, bytes] = field(default_factory=dict)  # the work tree's .gitignore files -> bytes


# -- before -----------------------------------------------------------------------------------


def capture(root: Path) -> GitState:
    root = Path(root)
    git_dir = _abs(root, _out(root, "rev-parse", "--absolute-git-dir"))
    common_dir = _abs(root, _out(root, "rev-parse", "--git-common-dir"))
    ignored = ignored_paths(root)
    return GitState(
        root=root,
        git_dir=git_dir,
        common_dir=common_dir,
        head_ref=_head_ref(root),
        head=_head(root),
        refs=_refs(root),
        others=_other_worktree_branches(root),
        index=_index_bytes(git_dir),
        entries=_entries(root),
        control=_control(git_dir, common_dir),
        op_state=_op_state(git_dir),
        ignored=_ignored_states(root, ignored),
        rules=ignore_rules(root, ignored),
    )


def ignored_paths(root: Path) -> set[str]:
    """Every untracked file git ignores in the work tree (outside `.git/` and `.graphlemon/`)."""
    args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", "."]
    args += [f":(exclude){top}" for top in SKIPPED_TOP]
    out = _git(root, *args).stdout
    return {p for p in (os.fsdecode(e) for e in out.split(b"\0")) if p and not p.endswith("/")}


# -- after: git's own state -------------------------------------------------------------------


def restore_git(before: GitState) -> list[GitFinding]:
    """Put git's control files, HEAD, refs and index back as they were; one finding per change."""
    findings = _restore_control(before)  # first: no planted hook or fsmonitor runs in the git calls below
    findings += _restore_op_state(before)
    findings += _restore_head(before)
    findings += _restore_refs(before)
    findings += _restore_index(before, head_moved=any(f.kind == "git_commit" for f in findings))
    return findings


def _restore_control(before: GitState) -> list[GitFinding]:
    findings = []
    now = _control(before.git_dir, before.common_dir)
    for path in sorted(set(now) | set(before.control)):
        old, new = before.control.get(path), now.get(path)
        if old == new:
            continue
        target = Path(path)
        base, rel = _split(target, before.git_dir, before.common_dir)
        beneath.remove(base, rel)
        if old is not None and old.startswith(b"symlink:"):
            beneath.symlink(base, rel, os.fsdecode(old.removeprefix(b"symlink:")))
        elif old is not None:
            beneath.write_bytes(base, rel, old, mode=0o755 if "/hooks/" in path else 0o644)
        what = "created" if old is None else "deleted" if new is None else "changed"
        rel = _git_rel(before, target)
        findings.append(GitFinding("git_control", rel, f"claude {what} git's {rel}; it was put back"))
    return findings


def _restore_op_state(before: GitState) -> list[GitFinding]:
    findings = []
    for name in sorted(_op_state(before.git_dir) - before.op_state):
        beneath.remove_tree(before.git_dir, name)
        findings.append(
            GitFinding(
                "git_operation",
                name,
                f"claude left git's {name} (an unfinished merge, rebase or commit); it was removed",
            )
        )
    return findings


def _restore_head(before: GitState) -> list[GitFinding]:
    root = before.root
    head_ref, head = _head_ref(root), _head(root)
    branch = _ref(root, before.head_ref) if before.head_ref else None
    if head_ref == before.head_ref and head == before.head and (before.head_ref is None or branch == before.head):
        return []
    if before.head_ref is not None:
        if before.head is not None and branch != before.head:
            _git(root, "update-ref", "-m", "graphlemon: put back after a claude turn", before.head_ref, before.head)
        _git(root, "symbolic-ref", "HEAD", before.head_ref)
    elif before.head is not None:
        _git(root, "update-ref", "--no-deref", "HEAD", before.head)
    was = f"{_branch(before.head_ref)} at {_short(before.head)}"
    now = f"{_branch(head_ref)} at {_short(head)}"
    if head_ref == before.head_ref and head == before.head:
        now = f"{_branch(before.head_ref)} at {_short(branch)}"
    why = (
        f"claude moved HEAD ({was} -> {now}: a commit, reset or checkout); HEAD was put back and what the move "
        "changed is judged as work-tree changes"
    )
    return [GitFinding("git_commit", "HEAD", why)]


def _restore_refs(before: GitState) -> list[GitFinding]:
    root = before.root
    now = _refs(root)
    skipped = before.others | _other_worktree_branches(root) | ({before.head_ref} if before.head_ref else set())
    findings = []
    for name in sorted((set(now) | set(before.refs)) - skipped):
        old, new = before.refs.get(name), now.get(name)
        if old == new:
            continue
        if old is None:
            _git(root, "update-ref", "--no-deref", "-d", name, check=False)
            why = f"claude created {name}; it was deleted"
        elif old.startswith("ref: "):
            _git(root, "symbolic-ref", name, old.removeprefix("ref: "), check=False)
            why = f"claude changed the symbolic ref {name}; it was put back"
        else:
            done = _git(root, "update-ref", "--no-deref", name, old, check=False).returncode == 0
            what = "deleted" if new is None else f"moved ({_short(old)} -> {_short(new)})"
            why = f"claude {what} {name}; " + ("it was put back" if done else "it could not be put back")
        findings.append(GitFinding("git_ref", name, why))
    return findings


def _restore_index(before: GitState, *, head_moved: bool) -> list[GitFinding]:
    entries = _entries(before.root)
    if before.index is None or (entries == before.entries and not head_moved):
        return []
    beneath.write_bytes(before.git_dir, "index", before.index)  # a new file renamed over it: no link followed
    hidden = _hiding_entries(entries) - _hiding_entries(before.entries)
    if not hidden:
        return []  # staged changes only: the work tree still shows them to the path checks
    shown = ", ".join(sorted(hidden)[:10])
    why = (
        f"claude marked index entries that hide changes (assume-unchanged, skip-worktree or conflicts): {shown}; "
        "the index was put back"
    )
    return [GitFinding("git_index", sorted(hidden)[0], why)]



def ignore_rules(root: Path, ignored: set[str]) -> dict[str, bytes]:
    args = ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ":(glob)**/.gitignore"]
    paths = {os.fsdecode(p) for p in _git(root, *args).stdout.split(b"\0") if p}
    paths |= {p for p in ignored if p.rsplit("/", 1)[-1] == ".gitignore"}
    return {p: data for p in sorted(paths) if (data := rule_bytes(root, p)) is not None}


def rule_bytes(root: Path, rel: str) -> bytes | None:
    """An ignore file's bytes (None: absent, or not a regular file reached without a link)."""
    try:
        return beneath.read_bytes(root, rel, max_bytes=MAX_KEPT_FILE)
    except (OSError, GraphLemonError):
        return None


# -- helpers ----------------------------------------------------------------------------------


def _ignored_states(root: Path, paths: set[str]) -> dict[str, KeptState]:
    """The state of each ignored file; bytes only of small files outside big ignored trees (dependencies, builds:
    regenerated, and too many to keep each turn), within MAX_KEPT_TOTAL. A file whose bytes are not kept is never
    deleted by the checks after the turn (git_ignored.py)."""
    per_top: dict[str, int] = {}
    for rel in paths:
        top = rel.split("/", 1)[0]
        per_top[top] = per_top.get(top, 0) + 1
    keeper = Keeper(in_memory=MAX_KEPT_FILE, spill=0)
    budget = MAX_KEPT_TOTAL
    out = {}
    for rel in sorted(paths):
        keep = budget > 0 and per_top[rel.split("/", 1)[0]] <= MAX_KEPT_TREE
        state = keeper.look(root, rel, keep=keep)
        budget -= len(state.data or b"")
        out[rel] = state
    return out


def inside(root: Path, rel: str) -> bool:
    real = os.path.realpath(root / rel)
    return real.startswith(str(Path(os.path.realpath(root))) + os.sep)


def _control(git_dir: Path, common_dir: Path) -> dict[str, bytes]:
    """git's control files (config, exclude, attributes, hooks) -> their bytes (a link: `symlink:<target>`),
    read without following a link."""
    places = [(common_dir, name) for name in CONTROL_FILES] + [(git_dir, "config.worktree")]
    places += [(common_dir, f"hooks/{e.name}") for e in beneath.entries(common_dir, "hooks") if e.kind != "dir"]
    out: dict[str, bytes] = {}
    for base, rel in places:
        what = beneath.kind(base, rel)
        if what == "link":
            out[str(base / rel)] = b"symlink:" + os.fsencode(beneath.readlink(base, rel) or "")
        elif what == "file":
            out[str(base / rel)] = beneath.read_bytes(base, rel)
        elif what == "other":
            out[str(base / rel)] = b"other:"
    return out


def _split(path: Path, git_dir: Path, common_dir: Path) -> tuple[Path, str]:
    """(the git folder a control file lies in, its path there)."""
    for base in (common_dir, git_dir):
        if path.is_relative_to(base):
            return base, path.relative_to(base).as_posix()
    raise AssertionError(f"{path} is outside {git_dir} and {common_dir}")


def _index_bytes(git_dir: Path) -> bytes | None:
    """The work tree's index as it is now (None: there is none), read without following a link."""
    try:
        return beneath.read_bytes(git_dir, "index", max_bytes=2 * 1024 * 1024 * 1024)
    except FileNotFoundError:
        return None


def _op_state(git_dir: Path) -> set[str]:
    return {name for name in OP_STATE if os.path.lexists(git_dir / name)}


def _refs(root: Path) -> dict[str, str]:
    out = _git(root, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)").stdout
    refs = {}
    for line in out.decode(errors="surrogateescape").splitlines():
        name, sha, symref = (line.split("\0") + ["", ""])[:3]
        refs[name] = f"ref: {symref}" if symref else sha
    return refs


def _ref(root: Path, name: str) -> str | None:
    proc = _git(root, "rev-parse", "--verify", "-q", f"{name}^{{commit}}", check=False)
    return proc.stdout.decode().strip() or None


def _head_ref(root: Path) -> str | None:
    return _git(root, "symbolic-ref", "-q", "HEAD", check=False).stdout.decode().strip() or None


def _head(root: Path) -> str | None:
    return _ref(root, "HEAD")


def _other_worktree_branches(root: Path) -> set[str]:
    out = _git(root, "worktree", "list", "--porcelain", check=False).stdout.decode(errors="surrogateescape")
    here = os.path.realpath(root)
    branches, path = set(), None
    for line in out.splitlines():
        if line.startswith("worktree "):
            path = os.path.realpath(line.removeprefix("worktree "))
        elif line.startswith("branch ") and path != here:
            branches.add(line.removeprefix("branch "))
    return branches


def _entries(root: Path) -> bytes:
    return _git(root, "ls-files", "-z", "-s", "-v", check=False).stdout


def _hiding_entries(entries: bytes) -> set[str]:
    """Paths whose index entry hides work-tree changes: assume-unchanged (lower-case tag), skip-worktree (S),
    or a conflict stage."""
    hidden = set()
    for entry in entries.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        parts = meta.split(b" ")
        tag, stage = parts[0], parts[-1] if len(parts) >= 4 else b"0"
        if tag.islower() or tag == b"S" or stage != b"0":
            hidden.add(os.fsdecode(path))
    return hidden


def _git_rel(before: GitState, path: Path) -> str:
    for base in (before.common_dir, before.git_dir):
        if path.is_relative_to(base):
            return ".git/" + path.relative_to(base).as_posix()
    return str(path)


def _out(root: Path, *args: str) -> str:
    return _git(root, *args).stdout.decode().strip()


def _abs(root: Path, path: str) -> Path:
    p = Path(path)
    return Path(os.path.realpath(p if p.is_absolute() else root / p))


def _branch(ref: str | None) -> str:
    return ref.removeprefix("refs/heads/") if ref else "detached HEAD"


def _short(sha: str | None) -> str:
    return sha[:10] if sha else "nothing"
