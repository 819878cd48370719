"""Open or initialise a target repository (REQ-11, c_project_create).

A project is a git work tree with a `.graphlemon/` state directory holding
`project.json` and the ledger. `.graphlemon/` is listed in the repository's
`info/exclude`, so the loop never commits its own state.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from . import gitrun
from .errors import ErrorCode, GraphLemonError, permission_denied
from .ledger import Ledger
from .models import LEDGER_FILES, Project, ProjectSettings
from .test_counts import STATE_DIR

PROJECT_FILE = "project.json"
EXCLUDE_LINE = f"/{STATE_DIR}/"


@dataclass
class ProjectHandle:
    """An opened project: its root, state directory, metadata and ledger."""

    root: Path
    meta: Project
    ledger: Ledger

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def project_id(self) -> str:
        return self.meta.project_id


@dataclass(frozen=True)
class InitResult:
    project: ProjectHandle
    created: bool  # False: the project already existed (idempotent re-init)
    git_initialised: bool


def init_project(path: Path | str, confirm_git_init: Callable[[str], bool] | None = None) -> InitResult:
    """Create `.graphlemon/` and project.json in a git repository; idempotent.

    A folder that is not a git repository asks `confirm_git_init(question)` before
    `git init`; declining (or no callback) aborts with nothing written.
    """
    root = _existing_dir(path)
    existing = _load_meta(root)
    if existing is None:
        _check_can_create(root)  # before `git init` or any file: nothing is half-written
    if existing is not None:
        handle = ProjectHandle(root, existing, Ledger(root / STATE_DIR))
        require_git(handle)  # its .git removed: what to do, in the words every command uses (not git's own)
        ensure_excluded(root)
        return InitResult(handle, created=False, git_initialised=False)
    git_initialised = False
    _refuse_git_dir(root)
    top = _git_toplevel(root)
    if top is None:
        question = f"{root} is not a git repository. Run `git init` there?"
        if confirm_git_init is None or not confirm_git_init(question):
            raise GraphLemonError(
                ErrorCode.ABORTED,
                f"{root} is not a git repository and git init was declined; nothing was written",
                path=str(root),
            )
        _git(root, "init", "--quiet")
        git_initialised = True
    elif top != root:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM,
            f"{root} is inside the git repository {top}; initialise the repository's top level instead",
            path=str(root),
            toplevel=str(top),
        )
    meta, created = _create_meta(root)
    ensure_excluded(root)
    ledger = Ledger(root / STATE_DIR)
    return InitResult(ProjectHandle(root, meta, ledger), created=created, git_initialised=git_initialised)


def open_project(path: Path | str | None = None) -> ProjectHandle:
    """Open the project at `path`, or find it from the current directory upwards (like git)."""
    if path is not None:
        root = _existing_dir(path)
        meta = _load_meta(root)
        if meta is None:
            raise GraphLemonError(
                ErrorCode.PROJECT_NOT_FOUND,
                f"{root} is not a GraphLemon project (no {STATE_DIR}/{PROJECT_FILE}); run `graphlemon init {path}` first",
                path=str(root),
            )
        return ProjectHandle(root, meta, Ledger(root / STATE_DIR))
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        meta = _load_meta(candidate)
        if meta is not None:
            return ProjectHandle(candidate, meta, Ledger(candidate / STATE_DIR))
    raise GraphLemonError(
        ErrorCode.PROJECT_NOT_FOUND,
        f"no GraphLemon project in {here} or its parents; pass --project DIR or run `graphlemon init DIR`",
        path=str(here),
    )


def update_settings(handle: ProjectHandle, **fields: object) -> ProjectHandle:
    """Change the project's settings in project.json (atomically: a new file replaces the old one) and in `handle`.
    An unknown setting or a bad value is INVALID_PARAM and changes nothing."""
    current = _load_meta(handle.root) or handle.meta
    try:
        settings = ProjectSettings.model_validate({**current.settings.model_dump(), **fields})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"project setting {'.'.join(map(str, first['loc']))}: "
                              f"{first['msg']}", path=str(handle.root)) from None  # fmt: skip
    meta = current.model_copy(update={"settings": settings})
    file = handle.state_dir / PROJECT_FILE
    tmp = handle.state_dir / f".{PROJECT_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(meta.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, file)
    except PermissionError as exc:
        tmp.unlink(missing_ok=True)
        raise permission_denied(exc.filename or file, "write") from None
    handle.meta = meta
    return handle


def require_git(handle: ProjectHandle) -> None:
    """GIT_ERROR unless the project's root is still the top of a git work tree (the loop needs git)."""
    top = _git_toplevel(handle.root)
    if top == handle.root:
        return
    where = (
        f"is now inside the git repository {top}"
        if top
        else "is no longer a git repository (.git is missing or broken)"
    )
    raise GraphLemonError(
        ErrorCode.GIT_ERROR,
        f"{handle.root} has {STATE_DIR}/ but {where}; restore its .git folder, or run `git init` there and "
        f"`graphlemon init {handle.root}` again",
        path=str(handle.root),
    )


def require_writable(handle: ProjectHandle) -> None:
    """PERMISSION_DENIED naming the first part of the state directory this user cannot write (checked before a
    command writes anything, so a refused command leaves nothing half-written)."""
    state = handle.state_dir
    files = [state / name for name in sorted(set(LEDGER_FILES.values()))]
    for path in [state, *(f for f in files if f.exists())]:
        if not os.access(path, os.W_OK):
            raise permission_denied(path, "write", f"GraphLemon appends its ledger there: `chmod -R u+w {state}`")


# -- helpers -------------------------------------------------------------------------------


def _check_can_create(root: Path) -> None:
    state = root / STATE_DIR
    target = state if state.is_dir() else root
    if not os.access(target, os.W_OK | os.X_OK):
        raise permission_denied(target, "write", f"`graphlemon init` creates {state} there; nothing was written")


def _existing_dir(path: Path | str) -> Path:
    if str(path).strip() == "" or "\x00" in str(path):
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"project path {str(path)!r} is empty or not a file name")
    p = Path(path).expanduser()
    if not p.exists():
        raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"folder {p} does not exist", path=str(p))
    if not p.is_dir():
        raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"{p} is not a folder", path=str(p))
    return p.resolve()


def _load_meta(root: Path) -> Project | None:
    file = root / STATE_DIR / PROJECT_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except UnicodeDecodeError as exc:
        raise GraphLemonError(
            ErrorCode.LEDGER_CORRUPT, f"{file}: not UTF-8 (byte at offset {exc.start})", file=str(file)
        ) from None
    except PermissionError:
        raise permission_denied(file, "read") from None
    try:
        return Project.model_validate_json(text)
    except ValidationError as exc:
        raise GraphLemonError(
            ErrorCode.LEDGER_CORRUPT, f"{file}: invalid project.json: {exc.errors()[0]['msg']}", file=str(file)
        ) from None


def _create_meta(root: Path) -> tuple[Project, bool]:
    """Write project.json atomically; if another process won the race, use its project."""
    state = root / STATE_DIR
    meta = Project(project_id=f"p-{secrets.token_hex(4)}", target_path=str(root))
    tmp = state / f".{PROJECT_FILE}.{os.getpid()}.tmp"
    try:
        state.mkdir(exist_ok=True)
        tmp.write_text(json.dumps(meta.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    except PermissionError as exc:
        raise permission_denied(exc.filename or state, "write") from None
    try:
        os.link(tmp, state / PROJECT_FILE)  # fails if it exists: no duplicate project
        created = True
    except FileExistsError:
        created = False
    finally:
        tmp.unlink(missing_ok=True)
    return (meta, True) if created else (_load_meta(root), False)  # type: ignore[return-value]


def _git(cwd: Path, *args: str) -> str:
    proc = gitrun.text(cwd, *args)
    if proc.returncode != 0:
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {' '.join(args)} failed: {proc.stderr.strip()}", cwd=str(cwd))
    return proc.stdout.strip()


def _refuse_git_dir(root: Path) -> None:
    """A bare repository (or the inside of a .git folder) has no work tree for the loop: INVALID_PARAM, nothing written."""
    proc = gitrun.text(root, "rev-parse", "--is-bare-repository", "--is-inside-git-dir")
    if proc.returncode == 0 and "true" in proc.stdout.split():
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM,
            f"{root} is a bare repository or a git folder, not a work tree; clone it (`git clone {root} DIR`) and "
            "initialise the clone; nothing was written",
            path=str(root),
        )


def require_commit(handle: ProjectHandle) -> str:
    """The commit HEAD points at; a repository without commits (an unborn HEAD) is INVALID_PARAM."""
    proc = gitrun.text(handle.root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if proc.returncode != 0:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM,
            f"{handle.root} has no commits yet (HEAD is unborn); commit the starting code first, the loop branches "
            "from HEAD",
            path=str(handle.root),
        )
    return proc.stdout.strip()


def _git_toplevel(root: Path) -> Path | None:
    proc = gitrun.text(root, "rev-parse", "--show-toplevel")
    return Path(proc.stdout.strip()).resolve() if proc.returncode == 0 else None


def ensure_excluded(root: Path) -> None:
    """The state folder is listed in the repository's info/exclude (the loop never commits its own state)."""
    common = Path(_git(root, "rev-parse", "--git-common-dir"))
    exclude = (common if common.is_absolute() else root / common) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if not {EXCLUDE_LINE, STATE_DIR, f"{STATE_DIR}/"} & set(text.splitlines()):
        with exclude.open("a", encoding="utf-8") as fh:
            fh.write(("\n" if text and not text.endswith("\n") else "") + EXCLUDE_LINE + "\n")


def config_dir() -> Path:
    """This user's GraphLemon folder: $GRAPHLEMON_CONFIG_DIR, else $XDG_CONFIG_HOME/graphlemon (~/.config/graphlemon)."""
    explicit = os.environ.get("GRAPHLEMON_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "graphlemon"
