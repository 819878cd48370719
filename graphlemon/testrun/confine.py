"""Confined test runs: agent-written tests run in a bubblewrap (`bwrap`) sandbox on Linux.

Inside: the work tree (and the runner's report folder) writable; the rest of the
filesystem read-only; a private `/tmp`; no network (loopback only) unless asked;
the project's `.graphlemon/` folder (the ledger) replaced by an empty read-only
folder (the work tree inside it, as the loop makes them, shown again), the user's
home by an empty private one (the project's repository, when it lives there, shown
again read-only, its `.graphlemon/` still hidden). From home only the tool folders the run needs are shown again,
read-only: the PATH entries, the running Python's prefixes, and the language
toolchains' homes (`~/go`, `~/.cargo`, `~/.rustup`, and GOPATH / CARGO_HOME /
RUSTUP_HOME when set). A private pid namespace ends every process with the run.

`GRAPHLEMON_TEST_CONFINEMENT` chooses: `auto` (default: confine when bwrap works,
else say so loudly once and run unconfined), `required` (refuse to run
unconfined), `off` (never confine). Each result records how it ran.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ErrorCode, GraphLemonError, invalid_param

log = logging.getLogger(__name__)
SETTING = "GRAPHLEMON_TEST_CONFINEMENT"
Mode = Literal["auto", "required", "off"]
Confined = Literal["bwrap", "none"]
TOOL_HOMES = ("go", ".cargo", ".rustup")
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # graphlemon's own plugins and reporters
TOOL_HOME_VARS = ("GOPATH", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME")


@dataclass(frozen=True)
class Confinement:
    """How one test run is confined: `workdir` writable, `hidden` replaced by empty folders."""

    workdir: Path
    hidden: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # shown read-only even under home (the project's repository)
    network: bool = False
    mode: Mode | None = None  # None: read GRAPHLEMON_TEST_CONFINEMENT

    def resolved_mode(self) -> Mode:
        if self.mode is not None:
            return self.mode
        value = os.environ.get(SETTING, "auto").strip().lower() or "auto"
        if value not in ("auto", "required", "off"):
            raise invalid_param(f"{SETTING} must be auto, required or off, not {value!r}")
        return value  # type: ignore[return-value]


@dataclass
class _Probe:
    lock: threading.Lock = field(default_factory=threading.Lock)
    result: tuple[str | None, str] | None = None  # (bwrap path or None, why not)
    warned: bool = False


_probe = _Probe()


def for_workdir(workdir: Path, state_dir: Path | None = None, *, mode: Mode | None = None) -> Confinement:
    """The confinement of an agent stage's test run in `workdir`; `state_dir` (the ledger folder) is hidden."""
    if state_dir is None:
        return Confinement(workdir=Path(workdir), mode=mode)
    repository = Path(state_dir).parent  # its .git (which a worktree's .git file names) and its tools, read-only
    return Confinement(workdir=Path(workdir), hidden=(Path(state_dir),), readable=(repository,), mode=mode)


def bwrap_available() -> tuple[str | None, str]:
    """(path of a working bwrap, "") or (None, why not); probed once per process."""
    with _probe.lock:
        if _probe.result is None:
            _probe.result = _probe_bwrap()
        return _probe.result


def _probe_bwrap() -> tuple[str | None, str]:
    if not sys.platform.startswith("linux"):
        return None, f"confinement needs Linux (bubblewrap); this is {sys.platform}"
    path = shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap (bwrap) is not installed; install the 'bubblewrap' package"
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net", "true"]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip()[:300]
        return None, f"bwrap cannot create namespaces here (the kernel refused): {why}"
    return path, ""


def wrap(
    argv: list[str], conf: Confinement | None, *, cwd: Path, writable: Iterable[Path] = ()
) -> tuple[list[str], Confined]:
    """`argv` as it runs under `conf` (unchanged when not confined), and how it runs."""
    if conf is None or not argv or shutil.which(argv[0]) is None:
        return argv, "none"  # a missing command fails the same way, confined or not
    mode = conf.resolved_mode()
    if mode == "off":
        return argv, "none"
    bwrap, why = bwrap_available()
    if bwrap is None:
        if mode == "required":
            raise GraphLemonError(
                ErrorCode.TEST_RUNNER_ERROR,
                f"{SETTING}=required and tests cannot be confined: {why}; refusing to run agent-written tests",
            )
        _warn_once(why)
        return argv, "none"
    return [bwrap, *bwrap_args(conf, cwd=cwd, writable=writable), "--", *argv], "bwrap"


def bwrap_args(
    conf: Confinement, *, cwd: Path, writable: Iterable[Path] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """The bwrap options: a parent's mount always comes before the mounts inside it."""
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    masked = [Path("/tmp")] + ([home] if home.resolve() != Path("/") else [])  # replaced by empty private folders
    mounts: list[tuple[Path, str]] = [(m, "--tmpfs") for m in masked]
    # what the run must still read inside them, read-only: tools and Python (a venv may live under /tmp too), the repo
    shown = _tool_dirs(home, env) + [Path(p).resolve() for p in conf.readable]
    mounts += [(p, "--ro-bind") for p in shown if any(_under(p, m) for m in masked)]
    mounts += [(p, "--tmpfs") for p in conf.hidden if p.exists()]
    mounts += [(Path(conf.workdir), "--bind"), *[(Path(p), "--bind") for p in writable]]
    args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not conf.network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path, op in sorted(_unique(mounts), key=lambda m: len(m[0].parts)):
        args += [op, str(path)] if op == "--tmpfs" else [op, str(path), str(path)]
    for path in conf.hidden:  # after the mounts inside it exist: an empty, read-only folder
        if path.exists():
            args += ["--remount-ro", os.path.realpath(path)]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(cwd)]
    return args


def _tool_dirs(home: Path, env: Mapping[str, str]) -> list[Path]:
    """Folders under home a test run needs to read: PATH entries, Python prefixes, toolchain homes."""
    found = [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    found += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent, PACKAGE_DIR]
    found += [home / name for name in TOOL_HOMES]
    found += [Path(env[name]) for name in TOOL_HOME_VARS if env.get(name)]
    return [p.resolve() for p in found if p.is_absolute() and p.is_dir()]


def _under(path: Path, home: Path) -> bool:
    home = home.resolve()
    return path != home and home in path.parents


def _unique(mounts: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """One mount per path (resolved); a later mount of the same path wins (the work tree over a hidden one)."""
    out: dict[Path, str] = {}
    for path, op in mounts:
        real = Path(os.path.realpath(path))
        out.pop(real, None)
        out[real] = op
    return list(out.items())


def _warn_once(why: str) -> None:
    with _probe.lock:
        if _probe.warned:
            return
        _probe.warned = True
    log.warning(
        "TESTS RUN UNCONFINED: agent-written tests run with your full rights (%s). Set %s=required to refuse instead.",
        why,
        SETTING,
    )
    print(f"warning: TESTS RUN UNCONFINED: {why}", file=sys.stderr)
