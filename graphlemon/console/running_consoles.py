"""The consoles running on this machine for this user, each recorded while it serves (Jupyter's `server list`):
`graphlemon console list` prints their URLs with their tokens, and `graphlemon run` links a stopped task to its page.

Each console writes `<config dir>/consoles/<pid>.json` (the folder 0700, the file 0600: it holds the token, which
lets its reader steer the console, so only this user may read it) when it starts, and removes it when it stops. A
file whose process is gone, or is no longer a GraphLemon console, is stale: listing skips it and removes it.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from ..models import utcnow
from ..processes import pid_alive

FOLDER = "consoles"


class ConsoleInstance(BaseModel):
    pid: int
    host: str
    port: int
    url: str  # with the token: opening it lets this browser steer the console
    started_at: datetime
    cwd: str

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    def task_url(self, project_id: str, task_id: str) -> str:
        return f"{self.base}/#/p/{quote(project_id, safe='')}/t/{quote(task_id, safe='')}"


def folder() -> Path:
    from ..project import config_dir

    return config_dir() / FOLDER


def record(host: str, port: int, url: str) -> Path:
    """This process serves a console: written 0600 in a 0700 folder, before the token is in it (no moment when
    another user could read it)."""
    directory = folder()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(directory, 0o700)
    path = directory / f"{os.getpid()}.json"
    info = ConsoleInstance(pid=os.getpid(), host=host, port=port, url=url, started_at=utcnow(), cwd=os.getcwd())
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(info.model_dump_json())
    os.replace(tmp, path)
    return path


def forget(path: Path) -> None:
    path.unlink(missing_ok=True)


def running() -> list[ConsoleInstance]:
    """The consoles serving now (oldest first); stale records are removed."""
    directory = folder()
    found = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            info = ConsoleInstance.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            continue
        if _is_console(info.pid):
            found.append(info)
        else:
            path.unlink(missing_ok=True)
    return sorted(found, key=lambda i: i.started_at)


def _is_console(pid: int) -> bool:
    """`pid` is alive and runs GraphLemon (a recycled pid running something else is not a console)."""
    if not pid_alive(pid):
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: trust the live pid
    return b"graphlemon" in argv or pid == os.getpid()
