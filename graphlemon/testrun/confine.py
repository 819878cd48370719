"""Confined runs: agent-written code runs in a bubblewrap (`bwrap`) sandbox on Linux (docs/agents.md,
"What the sandbox promises").

* Unprivileged, whoever runs GraphLemon: a user namespace in which the process is uid/gid 65534, every
  capability dropped (effective, permitted, bounding, ambient), no_new_privs, a new session (no terminal to inject
  into), and a seccomp filter (`syscall_filter.py`) that refuses mount, namespaces, ptrace, keyrings, bpf, perf and
  the like. As root the namespace is one GraphLemon made (`root_identity.py`): its 65534 is an unprivileged host
  id, never root, and the writable folders are shown through idmapped mounts so they stay root's on disk.
* A filesystem built from what the run needs, never `/` with holes: `/usr` and the root's links into it, a copy of
  the named `/etc` entries every user may read (`etc_view`), the toolchains by allow-list (`toolchain_mounts.py`),
  GraphLemon's package, of the project's repository only its installed dependencies (`repository_tools`) and its
  git dir, read-only, its config a copy without remotes' URLs or credential settings (`git_view.py`; never the
  person's work tree: an ignored `.env` is not there), and the work tree writable
  except its `.git` pointer and git dirs (read-only). `/proc/sys` and `/dev` read-only, a
  sized private `/dev/shm`. No `/run`, `/var/run`, no host `/tmp`, no home (an empty private one), so no host
  socket is reachable by path; without network (always) the abstract socket namespace is a new one too.
* Limits (`SandboxSettings`, the project's `settings.sandbox`), held by the launcher (`launcher.py`) before bwrap
  starts: processes, file size, open files, CPU seconds and address space per process, a sized private `/tmp`,
  home and `/dev/shm`, and the writable folders' size on disk, watched while the run goes. A run a limit stopped
  says `resource_limit` (`judge_outcome`). Processes are counted per user by the kernel, which does not count
  root's: as root the bound comes from a pids cgroup when one can be made (`cgroups.py`).
* A private pid namespace; when the command ends the launcher ends whatever it left behind. With `status` bwrap
  reports the namespace's init (`--json-status-fd`), by which `sandbox_end.end_run` ends the run from the host and
  checks that nothing of it is left.

`AgentProcessConfinement` is the same sandbox for an agent's own process (Claude Code): its per-turn config folder
writable, its install dir read-only, no address-space limit, and a network namespace whose only way out is the
egress proxy's Unix socket (`egress_bridge.py` inside), so every command it runs is confined too.

`GRAPHLEMON_TEST_CONFINEMENT` chooses: `required` (default: refuse to run agent-written code
unconfined), `auto` (confine when bwrap works, else say so loudly once and run unconfined), `off`
(never confine). Each result records how it ran.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..sandbox_settings import SandboxSettings
from . import cgroups, root_identity, syscall_filter
from .git_view import scrubbed_config
from .launcher import FILTER_FD, RESOURCE_LIMIT, STATUS_FD, launcher
from .process import ProcessOutcome
from .root_identity import RootIdentityError
from .toolchain_mounts import (
    PACKAGE_DIR,
    TOOL_HOME_VARS,
    TOOL_HOMES,
    allowed_parts,
    covered_by_usr,
    credentials_in,
    tool_mounts,
)

log = logging.getLogger(__name__)
SETTING = "GRAPHLEMON_TEST_CONFINEMENT"
Mode = Literal["auto", "required", "off"]
DEFAULT_MODE: Mode = "required"
FIX = (
    "Install bubblewrap (Debian: apt-get install bubblewrap libseccomp2) and check with `graphlemon doctor "
    f"sandbox`, or opt out explicitly with {SETTING}=auto (confine when possible) or {SETTING}=off (never confine: "
    "agent-written code runs with your rights)"
)
Confined = Literal["bwrap", "none"]
__all__ = ["PACKAGE_DIR", "RESOURCE_LIMIT", "TOOL_HOMES", "TOOL_HOME_VARS"]
SANDBOX_ID = 65534  # the uid and gid inside (the conventional `nobody`)
EGRESS_BRIDGE = Path(__file__).resolve().with_name("egress_bridge.py")
EGRESS_SOCKET = "/.graphlemon-egress.sock"  # where the egress proxy's socket is inside
EGRESS_PORT = 3128  # where egress_bridge.py listens inside (the sandbox's own loopback)
# the folders of the person's repository a work tree's run may use (Node looks for node_modules above the work tree;
# a virtualenv at the top): shown read-only, nothing else of the person's work tree
REPOSITORY_TOOLS = ("node_modules", ".venv", "venv")
SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# what programs read from /etc: the loader's cache, users and groups, name lookup, time zone, certificates,
# Debian's alternatives (links such as /usr/bin/java point through them), services and MIME types
ETC_FILES = (
    "ld.so.cache", "passwd", "group", "nsswitch.conf", "hosts", "resolv.conf", "services", "localtime",
    "ssl", "ca-certificates", "alternatives", "mime.types",
)  # fmt: skip
# bwrap's own refusal to start the command (the interpreter or tool is not inside the sandbox)
START_FAILURE = "bwrap: execvp"
LIMIT_SIGNALS = {signal.SIGXCPU: "cpu_seconds", signal.SIGXFSZ: "file_size_mb"}


@dataclass(frozen=True)
class Confinement:
    """How one run is confined: `workdir` writable, `hidden` replaced by empty folders."""

    workdir: Path
    hidden: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # shown read-only (the project's repository)
    network: bool = False
    mode: Mode | None = None  # None: read GRAPHLEMON_TEST_CONFINEMENT
    settings: SandboxSettings = field(default_factory=SandboxSettings)
    writable: tuple[Path, ...] = ()  # besides the work tree
    status: Path | None = None  # where bwrap reports the sandbox's init (sandbox_end.py ends the run by it)

    def resolved_mode(self) -> Mode:
        if self.mode is not None:
            return self.mode
        value = os.environ.get(SETTING, DEFAULT_MODE).strip().lower() or DEFAULT_MODE
        if value not in ("auto", "required", "off"):
            raise invalid_param(f"{SETTING} must be required, auto or off, not {value!r}")
        return value  # type: ignore[return-value]

    @property
    def address_space_mb(self) -> int | None:
        """The address-space limit of each process (None: none)."""
        return self.settings.memory_mb

    def limit_steps(self) -> list[str]:
        """The launcher's `ulimit` steps. The POSIX shell counts file size in 512-byte blocks and address space in
        KiB; `graphlemon doctor sandbox` reads the limits back from inside."""
        s, kib = self.settings, 1024
        steps = [
            # CPU: SIGXCPU at the soft limit (said as resource_limit), SIGKILL a second later at the hard one
            f"ulimit -n {s.open_files}", f"ulimit -t {s.cpu_seconds + 1}", f"ulimit -S -t {s.cpu_seconds}",
            f"ulimit -f {s.file_size_mb * kib * 2}",
            f"{{ ulimit -p {s.processes} || ulimit -u {s.processes}; }} 2>/dev/null",
        ]  # fmt: skip
        if self.address_space_mb is not None:
            steps.append(f"ulimit -v {self.address_space_mb * kib}")
        return steps

    def refusal(self, why: str) -> GraphLemonError:
        """The error when this run must be confined and cannot be."""
        return GraphLemonError(
            ErrorCode.TEST_RUNNER_ERROR,
            f"tests cannot be confined: {why}; refusing to run agent-written tests unconfined. {FIX}",
            setting=SETTING,
        )


@dataclass(frozen=True)
class AgentProcessConfinement(Confinement):
    """An agent's own process (Claude Code) and every command it runs: its per-turn config dir writable, its install
    dir read-only (`readable`), no address-space limit, and a network namespace of its own whose only way out is the
    egress proxy's Unix socket (`egress`, bound at EGRESS_SOCKET; `egress_bridge.py` listens on EGRESS_PORT)."""

    egress: Path | None = None

    @property
    def address_space_mb(self) -> int | None:
        return None

    def refusal(self, why: str) -> GraphLemonError:
        return GraphLemonError(
            ErrorCode.EXECUTOR_ERROR,
            f"the claude_code backend runs Claude Code inside the sandbox and it cannot be confined here: {why}. "
            f"{FIX}",
            executor="claude_code", setting=SETTING,
        )  # fmt: skip


@dataclass
class _Probe:
    lock: threading.Lock = field(default_factory=threading.Lock)
    result: tuple[str | None, str] | None = None  # (bwrap path or None, why not)
    warned: bool = False


_probe = _Probe()


def for_workdir(workdir: Path, state_dir: Path | None = None, *, mode: Mode | None = None) -> Confinement:
    """The confinement of an agent stage's run in `workdir`; `state_dir` (the ledger folder) is hidden and its
    project's `settings.sandbox` (limits, declared environment) apply."""
    if state_dir is None:
        return Confinement(workdir=Path(workdir), mode=mode)
    tools = repository_tools(Path(state_dir).parent)  # its .git is shown by the work tree's pointer (`_git_paths`)
    return Confinement(
        workdir=Path(workdir), hidden=(Path(state_dir),), readable=tools, mode=mode,
        settings=project_settings(Path(state_dir)),
    )  # fmt: skip


def repository_tools(repository: Path) -> tuple[Path, ...]:
    """What a run is shown of the person's own work tree: only its installed dependencies (`REPOSITORY_TOOLS`: a
    real folder at its top, never a link), read-only; the rest of it (its ignored `.env`, a local database, files
    not committed) never. Credential-named entries inside are covered as in a toolchain's folders."""
    out = []
    for name in REPOSITORY_TOOLS:
        try:
            if stat.S_ISDIR(os.lstat(repository / name).st_mode):
                out.append(repository / name)
        except OSError:
            continue
    return tuple(out)


def for_agent_process(
    workdir: Path,
    state_dir: Path | None,
    *,
    program: str,
    writable: Iterable[Path] = (),
    egress: Path | None = None,
    mode: Mode | None = None,
    status: Path | None = None,
) -> AgentProcessConfinement:
    """The confinement of an agent's own process run as `program` in `workdir`: what `for_workdir` gives a test
    run, plus the program's install dirs read-only, `writable` (its config) writable, and `egress` (the proxy's
    socket) its only way out."""
    base = for_workdir(workdir, state_dir, mode=mode)
    return AgentProcessConfinement(
        workdir=base.workdir, hidden=base.hidden, readable=(*base.readable, *program_dirs(program)), mode=mode,
        settings=base.settings, writable=tuple(Path(p) for p in writable), egress=egress, status=status,
    )  # fmt: skip


def program_dirs(program: str) -> list[Path]:
    """Where `program` is installed: the folder it is found in (`~/.local/bin`) and the folder its links resolve
    to (`~/.local/share/claude/versions`), the whole prefix when that is a `bin` folder (`/opt/node/bin/x`:
    `/opt/node`)."""
    found = shutil.which(program)
    if found is None:
        return []
    real = Path(os.path.realpath(found)).parent
    out = [Path(os.path.abspath(found)).parent, real.parent if real.name == "bin" else real]
    home = Path(os.environ.get("HOME") or Path.home())
    shown = [q for p in dict.fromkeys(out) for q in allowed_parts(p, home)]  # never a home or a secret store whole
    return [p for p in dict.fromkeys(shown) if not covered_by_usr(p)]


def project_settings(state_dir: Path) -> SandboxSettings:
    """The project's `settings.sandbox` from its project.json (defaults when it has none)."""
    path = state_dir / "project.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8")).get("settings", {}).get("sandbox", {})
        return SandboxSettings.model_validate(raw)
    except FileNotFoundError:
        return SandboxSettings()
    except (OSError, ValueError, AttributeError, ValidationError) as exc:
        raise invalid_param(f"{path}: settings.sandbox is not valid: {exc}", path=str(path)) from None


def bwrap_available() -> tuple[str | None, str]:
    """(path of a working bwrap, "") or (None, why not); probed once per process, with the whole
    unprivileged setup (user namespace, dropped capabilities, seccomp filter)."""
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
    built, why = syscall_filter.available()
    if not built:
        return None, why
    try:
        argv = _launch(path, [*_identity_args(), "--ro-bind", "/usr", "/usr", *_root_links(), "--", "/usr/bin/true"])
        proc = subprocess.run(argv, capture_output=True, timeout=30)
    except RootIdentityError as exc:
        return None, str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip()[:300]
        return None, f"bwrap cannot create an unprivileged sandbox here (the kernel refused): {why}"
    return path, ""


def wrap(
    argv: list[str], conf: Confinement | None, *, cwd: Path, writable: Iterable[Path] = ()
) -> tuple[list[str], Confined]:
    """`argv` as it runs under `conf` (unchanged when not confined), and how it runs."""
    if conf is None or not argv or shutil.which(argv[0]) is None:
        return argv, "none"  # a missing command fails the same way, confined or not
    bwrap = sandbox_for(conf)
    if bwrap is None:
        return argv, "none"
    if isinstance(conf, AgentProcessConfinement) and conf.egress is not None:
        argv = [sys.executable, "-I", "-S", str(EGRESS_BRIDGE), EGRESS_SOCKET, str(EGRESS_PORT), "--", *argv]
    return confined_argv(bwrap, argv, conf, cwd=cwd, writable=writable), "bwrap"


def sandbox_for(conf: Confinement) -> str | None:
    """The bwrap that confines `conf`'s runs, or None when they run unconfined (`off`, or `auto` without a
    working bwrap: said loudly once); `required` without one is `conf.refusal`."""
    mode = conf.resolved_mode()
    if mode == "off":
        return None
    bwrap, why = bwrap_available()
    if bwrap is None:
        if mode == "required":
            raise conf.refusal(why)
        _warn_once(why)
    return bwrap


def confined_argv(
    bwrap: str, argv: list[str], conf: Confinement, *, cwd: Path, writable: Iterable[Path] = ()
) -> list[str]:
    """The whole command line: the launcher (limits, pids cgroup, filter descriptor, quota), bwrap, `argv`; as root
    refused (`conf.refusal`) where the sandbox's own identity cannot be made."""
    writable = list(writable)
    group = cgroups.new_group(conf.settings.processes) if os.geteuid() == 0 else None
    try:
        args = bwrap_args(conf, cwd=cwd, writable=writable)
        quota = ([p for p in _writable(conf, writable)], conf.settings.worktree_mb)
        return _launch(
            bwrap, [*args, "--", *argv], limits=conf.limit_steps(), group=group, quota=quota, status=conf.status
        )
    except RootIdentityError as exc:
        raise conf.refusal(str(exc)) from None


def _launch(bwrap: str, args: list[str], **launch) -> list[str]:
    """`bwrap args` behind the launcher; as root through the keeper's mount namespace, with its user namespace."""
    if not root_identity.needed():
        return launcher(syscall_filter.filter_file(), [bwrap, *args], **launch)
    enter, userns = root_identity.launcher_steps()
    return launcher(syscall_filter.filter_file(), [*enter, bwrap, *args], userns=userns, **launch)


def _identity_args() -> list[str]:
    """Unprivileged: uid/gid 65534 in a user namespace (as root: the prepared one, whose 65534 is an unprivileged
    host id), no capability, a new session, private pid / ipc / uts / cgroup namespaces, the seccomp filter."""
    ids = str(SANDBOX_ID)
    user = root_identity.identity_args() if root_identity.needed() else ["--unshare-user"]
    return [
        *user, "--uid", ids, "--gid", ids, "--cap-drop", "ALL", "--new-session", "--die-with-parent",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--seccomp", str(FILTER_FD),
    ]  # fmt: skip


def _writable(conf: Confinement, writable: Iterable[Path]) -> list[Path]:
    """The folders the run may write: the work tree, the confinement's own (a config file may not exist yet) and
    the run's (its report folder)."""
    extra = [*(Path(p) for p in conf.writable if os.path.lexists(p)), *(Path(p) for p in writable)]
    return [Path(conf.workdir), *extra]


def bwrap_args(
    conf: Confinement, *, cwd: Path, writable: Iterable[Path] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """The bwrap options: a parent's mount always comes before the mounts inside it. As root, the writable folders
    and the work tree's git dirs are shown through idmapped mounts (root_identity.py)."""
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    settings, mb = conf.settings, 1024 * 1024
    tools, credentials = tool_mounts(home, env)
    mounts: list[_Mount] = [_Mount(Path(p), "--ro-bind") for p in _system_dirs()]
    if home.resolve() != Path("/"):
        mounts.append(_Mount(home, "--tmpfs"))  # an empty private home; the tool folders under it are shown again
    mounts += [_Mount(p, "--ro-bind") for p in tools]
    mounts += [_Mount(p, "--ro-bind", _empty(p)) for p in credentials]  # covered: an empty file or folder
    mounts += [_Mount(Path(p).resolve(), "--ro-bind") for p in conf.readable if Path(p).exists()]
    mounts += [_Mount(p, "--ro-bind", _empty(p)) for p in credentials_in(conf.readable)]
    mounts += [_Mount(p, "--tmpfs") for p in conf.hidden if p.exists()]
    mounts += [_shown(p, "--bind") for p in _writable(conf, writable)]
    git_paths = _git_paths(Path(conf.workdir))
    mounts += [_shown(p, "--ro-bind") for p in git_paths]  # after the work tree: over it
    mounts += [_Mount(c, "--ro-bind", scrubbed_config(c) or Path("/dev/null")) for c in _git_configs(git_paths)]
    egress = conf.egress if isinstance(conf, AgentProcessConfinement) else None
    if egress is not None:
        mounts.append(_Mount(Path(EGRESS_SOCKET), "--ro-bind", Path(egress)))
    args = _identity_args()
    if conf.status is not None:
        args += ["--json-status-fd", str(STATUS_FD)]
    if not conf.network:
        args.append("--unshare-net")
    args += [*_root_links(), "--ro-bind", str(etc_view()), "/etc", "--dev", "/dev", "--proc", "/proc"]
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]  # no kernel setting is written from inside, whoever runs it
    args += ["--size", str(settings.shm_mb * mb), "--perms", "01777", "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    args += ["--size", str(settings.tmp_mb * mb), "--tmpfs", "/tmp", "--symlink", "/tmp", "/var/tmp"]
    for mount in sorted(_unique(mounts), key=lambda m: len(m.dest.parts)):
        if mount.op == "--tmpfs":
            args += ["--size", str(settings.tmp_mb * mb), mount.op, str(mount.dest)]
        else:
            args += [mount.op, str(mount.source or mount.dest), str(mount.dest)]
    for path in conf.writable:  # a link (a dotfiles manager's `~/.claude`) is shown as the link to its target
        if os.path.islink(path):
            args += ["--symlink", os.path.realpath(path), str(path)]
    for path in conf.hidden:  # after the mounts inside it exist: an empty, read-only folder
        if path.exists():
            args += ["--remount-ro", os.path.realpath(path)]
    args += ["--remount-ro", "/"]  # the sandbox's own root folder too: only the work tree, /tmp and home are writable
    args += ["--setenv", "TMPDIR", "/tmp", "--setenv", "HOME", str(home), "--chdir", str(cwd)]
    return args


@dataclass(frozen=True)
class _Mount:
    dest: Path
    op: str
    source: Path | None = None  # None: the same path on the host


def _shown(path: Path, op: str) -> _Mount:
    """A folder of the run's own (`--bind`) or its git dirs (`--ro-bind`): as root through an idmapped mount, so
    the sandbox's user owns what root owns there (and git inside sees its repository as its own)."""
    real = Path(os.path.realpath(path))
    if not root_identity.needed():
        return _Mount(real, op)
    return _Mount(real, op, root_identity.idmapped(real, read_only=op == "--ro-bind"))


def _empty(path: Path) -> Path:
    """What covers a credential entry: an empty folder for a folder, /dev/null for a file."""
    return _empty_dir() if path.is_dir() else Path("/dev/null")


@lru_cache(maxsize=1)
def _empty_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-empty-{os.getpid()}-"))
    folder.chmod(0o555)
    atexit.register(lambda: (folder.chmod(0o700), folder.rmdir()))
    return folder


@lru_cache(maxsize=1)
def _root_links_cached() -> tuple[str, ...]:
    """`/bin`, `/lib`, ...: the same links into `/usr` inside (merged-/usr systems)."""
    out: list[str] = []
    for name in SYSTEM_ROOTS[1:]:
        if os.path.islink(name):
            out += ["--symlink", os.readlink(name), name]
    return tuple(out)


def _root_links() -> list[str]:
    return list(_root_links_cached())


@lru_cache(maxsize=1)
def _system_dirs() -> tuple[str, ...]:
    """`/usr` and the root's system folders that are real folders."""
    return tuple(p for p in SYSTEM_ROOTS if os.path.isdir(p) and not os.path.islink(p))


class _EtcView:
    lock = threading.Lock()
    key: tuple = ()
    path: Path | None = None


def _etc_names() -> list[Path]:
    found = [Path("/etc", name) for name in ETC_FILES if os.path.lexists(f"/etc/{name}")]
    return found + sorted(Path("/etc").glob("python3*")) + sorted(Path("/etc").glob("java-*"))


def etc_view() -> Path:
    """A copy of the named `/etc` entries holding only what every user may read (no `ssl/private`, no file of
    root's alone, whoever runs GraphLemon), made once per process and again when they change; shown as the
    sandbox's `/etc` in one mount."""
    names = _etc_names()
    key = tuple((str(p), p.lstat().st_mtime_ns) for p in names)
    with _EtcView.lock:
        if _EtcView.path is None or key != _EtcView.key or not _EtcView.path.is_dir():
            folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-etc-{os.getpid()}-")) / "etc"
            folder.mkdir()
            for source in names:  # a link at the top (resolv.conf -> /run/...) is copied as what it names
                _copy_readable(source.resolve() if source.is_symlink() else source, folder / source.name)
            folder.chmod(0o755)
            if _EtcView.path is None:
                atexit.register(
                    lambda: shutil.rmtree(_EtcView.path.parent, ignore_errors=True) if _EtcView.path else None
                )
            elif _EtcView.path.is_dir():
                shutil.rmtree(_EtcView.path.parent, ignore_errors=True)
            _EtcView.path, _EtcView.key = folder, key
        return _EtcView.path


def _copy_readable(source: Path, target: Path) -> None:
    try:
        st = source.lstat()
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISDIR(st.st_mode) and st.st_mode & 0o005 == 0o005:
        target.mkdir()
        for child in sorted(source.iterdir()):
            _copy_readable(child, target / child.name)
    elif stat.S_ISREG(st.st_mode) and st.st_mode & 0o004:
        shutil.copy2(source, target, follow_symlinks=False)


def _git_paths(workdir: Path) -> list[Path]:
    """The work tree's `.git` (a pointer file or a folder) and, for a pointer, the git dirs it names: read-only."""
    dot_git = workdir / ".git"
    if not os.path.lexists(dot_git) or dot_git.is_symlink():
        return []
    out = [dot_git]
    if dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return out
        if text.startswith("gitdir:"):
            admin = Path(text.removeprefix("gitdir:").strip())
            admin = admin if admin.is_absolute() else workdir / admin
            if admin.is_dir():
                out.append(Path(os.path.realpath(admin)))
                common = admin / "commondir"
                if common.is_file():
                    named = Path(common.read_text(encoding="utf-8", errors="replace").strip())
                    out.append(Path(os.path.realpath(named if named.is_absolute() else admin / named)))
    return out


def _git_configs(git_paths: list[Path]) -> list[Path]:
    """The config files of the git dirs shown: each is shown as `git_view.scrubbed_config` (no remote URL, header
    or credential setting of the person's), the real one never."""
    return [Path(os.path.realpath(p)) / name for p in git_paths if p.is_dir() for name in ("config", "config.worktree")
            if os.path.isfile(p / name)]  # fmt: skip


def _unique(mounts: list[_Mount]) -> list[_Mount]:
    """One mount per path (resolved); a later mount of the same path wins (the work tree over a hidden one)."""
    out: dict[Path, _Mount] = {}
    for mount in mounts:
        real = Path(os.path.realpath(mount.dest))
        out.pop(real, None)
        out[real] = replace(mount, dest=real)
    return list(out.values())


def judge_outcome(outcome: ProcessOutcome, output: str, confined: Confined) -> tuple[ProcessOutcome, str]:
    """A confined run that could not start, or that a limit stopped, said so: the cause is the machine (infra),
    never the code. Could not start: bwrap could not execute the command, or the shell answered 126/127 (not
    found, not executable) — a tool the sandbox does not show. A limit: killed by SIGXCPU (CPU seconds) or SIGXFSZ
    (file size); the output gets a `resource_limit:` line naming it."""
    if confined != "bwrap" or outcome.start_error is not None:
        return outcome, output
    lines = output.splitlines()[:20]
    refused = next((line.strip() for line in lines if line.startswith(START_FAILURE)), None)
    if refused is None and outcome.exit_code in (126, 127) and lines:
        refused = lines[0].strip()
    if refused is not None:
        why = f"the command could not start inside the sandbox: {refused[:300]}"
        return replace(outcome, start_error=why), output
    limit = LIMIT_SIGNALS.get(-(outcome.exit_code or 0)) or LIMIT_SIGNALS.get((outcome.exit_code or 0) - 128)
    if limit is not None:
        output += f"\n[graphlemon] {RESOURCE_LIMIT}: the run was stopped by the sandbox's {limit} limit\n"
    return outcome, output


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
