"""The registry of known projects (REQ-11 v_project_setup): one JSON file in the user's config dir.

`graphlemon init` and the console's "add a project" both register a project here; the
project itself (its `.graphlemon/project.json`) stays the truth, the registry only
remembers where it is. The file lives in `$GRAPHLEMON_CONFIG_DIR`, else
`$XDG_CONFIG_HOME/graphlemon`, else `~/.config/graphlemon`.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from .. import gitrun
from ..errors import ErrorCode, GraphLemonError
from ..project import InitResult, ProjectHandle, config_dir, init_project, open_project
from ..skills.repo import SkillRepo

REGISTRY_FILE = "projects.json"
MAX_NAME_CHARS = 80


class RegisteredProject(BaseModel):
    project_id: str
    root: str
    available: bool = True  # False: the folder or its project.json is gone
    name: str = ""  # what the person calls it: the folder's name unless they renamed it




class ProjectRegistry:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else config_dir()

    @property
    def path(self) -> Path:
        return self.directory / REGISTRY_FILE

    def list(self) -> list[RegisteredProject]:
        out = []
        for entry in self._read():
            try:
                handle = open_project(entry["root"])
                available = handle.project_id == entry["project_id"]
            except GraphLemonError:
                available = False
            name = entry.get("name") or Path(entry["root"]).name or entry["root"]
            out.append(RegisteredProject(project_id=entry["project_id"], root=entry["root"], available=available,
                                         name=name))  # fmt: skip
        return out

    def forget(self, project_id: str) -> RegisteredProject:
        """Remove a project from the list (its folder and ledger are left as they are); PROJECT_NOT_FOUND if absent."""
        with self._locked():
            entries = self._read()
            kept = [e for e in entries if e["project_id"] != project_id]
            if len(kept) == len(entries):
                raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"no project {project_id!r} is registered",
                                      project_id=project_id)  # fmt: skip
            self._write(kept)
        gone = next(e for e in entries if e["project_id"] == project_id)
        return RegisteredProject(project_id=project_id, root=gone["root"], name=gone.get("name") or "", available=False)

    def rename(self, project_id: str, name: str) -> None:
        """INVALID_PARAM for an empty or over-long name (names are for people: 1 to 80 characters on one line)."""
        name = " ".join(name.split())
        if not 0 < len(name) <= MAX_NAME_CHARS:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"a project name has 1 to {MAX_NAME_CHARS} characters")
        with self._locked():
            entries = self._read()
            if not any(e["project_id"] == project_id for e in entries):
                raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"no project {project_id!r} is registered",
                                      project_id=project_id)  # fmt: skip
            self._write([{**e, "name": name} if e["project_id"] == project_id else e for e in entries])

    def get(self, project_id: str) -> ProjectHandle:
        """The registered project with this id, opened; PROJECT_NOT_FOUND otherwise."""
        for entry in self._read():
            if entry["project_id"] == project_id:
                try:
                    handle = open_project(entry["root"])
                except GraphLemonError as exc:
                    raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"project {project_id}: {exc.message}",
                                          project_id=project_id) from None  # fmt: skip
                if handle.project_id == project_id:
                    return handle
        raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"no project {project_id!r} is registered",
                              project_id=project_id)  # fmt: skip

    def register(self, handle: ProjectHandle) -> None:
        """Remember a project (idempotent; a folder re-initialised with a new id replaces its old entry)."""
        root = str(handle.root)
        with self._locked():
            old = self._read()
            named = {e["project_id"]: e["name"] for e in old if e.get("name")}
            entries = [e for e in old if e["root"] != root and e["project_id"] != handle.project_id]
            entry = {"project_id": handle.project_id, "root": root}
            if handle.project_id in named:  # registering again keeps the name the person gave it
                entry["name"] = named[handle.project_id]
            entries.append(entry)
            self._write(entries)

    def add(self, path: Path | str, confirm_git_init: Callable[[str], bool] | None = None) -> InitResult:
        """`graphlemon init` (the CLI calls this too): the project (init_project's rules and errors), its skills
        repository seeded from the built-ins when it is new (REQ-08), then registered. A relative path is refused:
        the console runs in its own folder, not in the person's shell, so it cannot know which folder they mean."""
        if str(path).strip() and not Path(str(path).strip()).expanduser().is_absolute():
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{str(path).strip()!r} is a relative path: give the "
                                  "folder's absolute path (the console does not know which folder you are in)",
                                  path=str(path))  # fmt: skip
        result = init_project(path, confirm_git_init=confirm_git_init)
        if result.created:
            SkillRepo(result.project.state_dir).ensure(result.project.ledger)
        self.register(result.project)
        return result

    # -- file ---------------------------------------------------------------------------------
    def _read(self) -> list[dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except ValueError as exc:
            raise GraphLemonError(
                ErrorCode.LEDGER_CORRUPT, f"{self.path}: not JSON ({exc})", file=str(self.path)
            ) from None
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, list):
            raise GraphLemonError(ErrorCode.LEDGER_CORRUPT, f"{self.path}: no 'projects' list", file=str(self.path))
        return [p for p in projects if isinstance(p, dict) and {"project_id", "root"} <= p.keys()]

    def _write(self, entries: list[dict]) -> None:
        tmp = self.path.with_name(f".{REGISTRY_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"projects": entries}, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)

    @contextmanager
    def _locked(self):
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / f".{REGISTRY_FILE}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


FIRST_COMMIT_ID = ["-c", "user.name=GraphLemon console", "-c", "user.email=console@graphlemon.local"]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Through the one git runner: the person's repository may hold hooks or config that must not run."""
    return gitrun.text(root, *args)


def _person_identity(root: Path) -> list[str]:
    """The person's git identity (repository, then global config: read, never executed), else the console's."""
    name = subprocess.run(["git", "config", "user.name"], cwd=root, capture_output=True, text=True).stdout.strip()
    email = subprocess.run(["git", "config", "user.email"], cwd=root, capture_output=True, text=True).stdout.strip()
    return ["-c", f"user.name={name}", "-c", f"user.email={email}"] if name and email else FIRST_COMMIT_ID


def has_commit(root: Path) -> bool:
    return _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").returncode == 0


def make_first_commit(root: Path) -> str:
    """Commit everything in a repository that has no commit yet (the person agreed in the console); the commit id.
    The person's own git identity when they have one, else the console's. A repository with commits is refused."""
    if has_commit(root):
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{root} already has commits; nothing was committed",
                              path=str(root))  # fmt: skip
    identity = _person_identity(root)
    message = "Initial commit (GraphLemon console)"
    for args in (["add", "-A"], [*identity, "commit", "--quiet", "--no-verify", "--allow-empty", "-m", message]):
        proc = _git(root, *args)
        if proc.returncode != 0:
            raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {' '.join(args)} in {root} failed: {proc.stderr.strip()}",
                                  path=str(root))  # fmt: skip
    return _git(root, "rev-parse", "HEAD").stdout.strip()
