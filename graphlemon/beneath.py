"""The one way the host touches a tree a sandbox could have written: never through a link, never a FIFO.

A work tree, a test run's scratch folder, a planner's drafts: a confined process or an agent may have
written there, and may have left a symlink to a root-only file, to `/proc/self/environ`, a FIFO that never
answers, or a file of many gigabytes. Every host read of such a tree goes through `read_bytes` /
`read_text` / `open_regular` here, every listing through `entries` / `walk_files`, and every change the host
makes there (a revert, the runner's own store) through `write_bytes` / `remove` / `prune_empty_dirs`:

* relative to a directory descriptor of the tree's root (the root itself is trusted: the loop made it);
* no symlink anywhere on the path: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
  where the kernel has it (Linux 5.6+), else one `O_NOFOLLOW` open per component; `..`, an absolute path or
  an empty component is refused before any open;
* regular files only: `O_NONBLOCK` at open (a FIFO opens without waiting for a writer), then `fstat` —
  a FIFO, socket, device or folder is refused;
* a size cap (`max_bytes`) and a time bound (`timeout_s`) on every read;
* a listing never follows a link: each entry says what it is (`file`, `dir`, `link`, `other`).

A refused path is `GraphLemonError(SANDBOX_VIOLATION)` with `kind` (`link`, `not_regular`, `escape`) and
`path`: the caller records it as a violation of its node (`violations.violation_event`). A path that does
not exist is `FileNotFoundError` (an `OSError`, as before); a file over the cap is IO_ERROR.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from .errors import ErrorCode, GraphLemonError

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
SYS_OPENAT2 = 437  # the same number on every architecture whose table was unified (x86_64, aarch64, ...)
OPENAT2_MACHINES = ("x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "loongarch64")
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30.0
CHUNK = 1024 * 1024
Kind = Literal["file", "dir", "link", "other", "absent"]
ViolationKind = Literal["link", "not_regular", "escape"]


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _libc_syscall():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    return fn


class _Openat2:
    """`openat2(2)` through libc's `syscall`, when this kernel and architecture have it (probed once)."""

    def __init__(self) -> None:
        self.syscall = _libc_syscall() if platform.machine().lower() in OPENAT2_MACHINES else None
        self.available = self.syscall is not None and self._probe()

    def _probe(self) -> bool:
        try:
            os.close(self.open(os.open("/", DIR_FLAGS), ".", DIR_FLAGS, close_dir=True))
        except OSError:
            return False  # ENOSYS (an old kernel) or EPERM (a seccomp filter that refuses it): per component
        return True

    def open(self, dir_fd: int, rel: str, flags: int, *, close_dir: bool = False) -> int:
        how = _OpenHow(flags, 0, RESOLVE)
        try:
            fd = self.syscall(SYS_OPENAT2, ctypes.c_int(dir_fd), ctypes.c_char_p(os.fsencode(rel)),
                              ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))  # fmt: skip
            err = ctypes.get_errno()
        finally:
            if close_dir:
                os.close(dir_fd)
        if fd < 0:
            raise OSError(err, os.strerror(err), rel)
        return int(fd)


_OPENAT2 = _Openat2()


def openat2_available() -> bool:
    """Whether the reader resolves paths with openat2 here (else one O_NOFOLLOW open per component)."""
    return _OPENAT2.available


@dataclass(frozen=True)
class Entry:
    name: str
    kind: Kind
    size: int = 0


def refused(path: str, kind: ViolationKind, why: str) -> GraphLemonError:
    return GraphLemonError(
        ErrorCode.SANDBOX_VIOLATION, f"sandbox: {path!r} {why}; GraphLemon did not follow it", path=path, kind=kind
    )


def is_refusal(exc: BaseException) -> bool:
    return isinstance(exc, GraphLemonError) and exc.code == ErrorCode.SANDBOX_VIOLATION and "kind" in exc.context


def parts_of(root: Path | str, rel: Path | str) -> list[str]:
    """The components of `rel` below `root` (an absolute `rel` must lie lexically inside `root`); an empty,
    `.` or `..` component, or a path outside the root, is refused (`escape`)."""
    text = os.fspath(rel)
    if "\0" in text:
        raise refused(text, "escape", "holds a NUL byte")
    if os.path.isabs(text):
        base = os.path.abspath(os.fspath(root))
        if text != base and not text.startswith(base.rstrip(os.sep) + os.sep):
            raise refused(text, "escape", f"is not inside {base}")
        text = text[len(base) :].lstrip(os.sep)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise refused(text, "escape", "climbs out of its folder ('..')")
    return parts


def _open_root(root: Path | str) -> int:
    return os.open(os.fspath(root), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def _walk_dirs(root_fd: int, parts: list[str], shown: str, *, make: bool = False) -> int:
    """A descriptor of the folder `parts` names below `root_fd` (each missing folder made first when `make`), never
    through a link (the caller closes it)."""
    if not parts:
        return os.dup(root_fd)
    if _OPENAT2.available and not make:
        try:
            return _OPENAT2.open(root_fd, "/".join(parts), DIR_FLAGS)
        except OSError as exc:
            raise _explain(exc, root_fd, parts, shown) from None
    fd = os.dup(root_fd)
    try:
        for i, part in enumerate(parts):
            if make:
                with suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _explain(exc, root_fd, parts[: i + 1], shown) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _explain(exc: OSError, root_fd: int, parts: list[str], shown: str) -> Exception:
    """An open that failed: a link on the path (ELOOP, or ENOTDIR on a link) is refused; else the OSError."""
    if exc.errno == errno.EXDEV:
        return refused(shown, "escape", "leaves its folder")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        link = _first_link(root_fd, parts)
        if link is not None or exc.errno == errno.ELOOP:
            where = f" ({link!r} is a symlink)" if link is not None and link != shown else ""
            return refused(shown, "link", f"goes through a symlink{where}")
    if exc.errno == errno.ENXIO:
        return refused(shown, "not_regular", "is a socket or a FIFO, not a regular file")
    if exc.errno in (errno.ENOTDIR,):
        return FileNotFoundError(errno.ENOENT, "not a folder on the way", shown)
    return exc


def _first_link(root_fd: int, parts: list[str]) -> str | None:
    fd = os.dup(root_fd)
    try:
        for i, part in enumerate(parts):
            try:
                st = os.lstat(part, dir_fd=fd)
            except OSError:
                return None
            if stat.S_ISLNK(st.st_mode):
                return "/".join(parts[: i + 1])
            if not stat.S_ISDIR(st.st_mode):
                return None
            nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


@contextmanager
def _folder(root: Path | str, parts: list[str], *, make: bool = False) -> Iterator[int | None]:
    """A descriptor of the folder `parts` names below `root` (its folders made first when `make`), opened without
    following a link (a link on the way is refused); None when it does not exist. Closed after the block."""
    root_fd = _open_root(root)
    try:
        try:
            fd = _walk_dirs(root_fd, parts, "/".join(parts), make=make)
        except FileNotFoundError:
            fd = None
    finally:
        os.close(root_fd)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _temp_name(name: str) -> str:
    return f".{name[:60]}.{os.getpid()}.{time.monotonic_ns()}.graphlemon-tmp"


def _open_file(root: Path | str, rel: Path | str) -> tuple[int, str]:
    parts = parts_of(root, rel)
    shown = "/".join(parts)
    if not parts:
        raise refused(os.fspath(rel), "not_regular", "is the folder itself, not a file")
    root_fd = _open_root(root)
    try:
        if _OPENAT2.available:
            try:
                fd = _OPENAT2.open(root_fd, shown, READ_FLAGS)
            except OSError as exc:
                raise _explain(exc, root_fd, parts, shown) from None
        else:
            dir_fd = _walk_dirs(root_fd, parts[:-1], shown)
            try:
                fd = os.open(parts[-1], READ_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                raise _explain(exc, root_fd, parts, shown) from None
            finally:
                os.close(dir_fd)
    finally:
        os.close(root_fd)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket or a device"
        raise refused(shown, "not_regular", f"is {what}, not a regular file")
    return fd, shown


@contextmanager
def open_regular(root: Path | str, rel: Path | str) -> Iterator[BinaryIO]:
    """A regular file below `root`, opened without following any link and without blocking, as a binary file."""
    fd, _ = _open_file(root, rel)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        yield fh  # type: ignore[misc]


def _read(fh: BinaryIO, limit: int, deadline: float, shown: str) -> bytes:
    """Up to `limit` bytes: in one read when the file's size is known (the common case), in chunks while it grows;
    IO_ERROR past the deadline."""
    chunks, left = [], limit
    want = min(left, os.fstat(fh.fileno()).st_size + 1)
    while left > 0:
        if time.monotonic() > deadline:
            raise GraphLemonError(ErrorCode.IO_ERROR, f"{shown}: reading it took too long; it was not read", path=shown)
        asked = max(1, min(want, left))
        try:
            chunk = fh.read(asked)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if chunk:
            chunks.append(chunk)
            left -= len(chunk)
        if len(chunk or b"") < asked:  # a short read of a regular file: its end
            break
        want = CHUNK
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_bytes(
    root: Path | str, rel: Path | str, *, max_bytes: int = DEFAULT_MAX_BYTES, timeout_s: float = DEFAULT_TIMEOUT_S,
    truncate: bool = False,
) -> bytes:  # fmt: skip
    """The bytes of a regular file below `root`; IO_ERROR when it holds more than `max_bytes` (`truncate`: its
    first `max_bytes` instead)."""
    deadline = time.monotonic() + timeout_s
    fd, shown = _open_file(root, rel)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        data = _read(fh, max_bytes + 1, deadline, shown)  # type: ignore[arg-type]
    if truncate:
        return data[:max_bytes]
    if len(data) > max_bytes:
        raise GraphLemonError(
            ErrorCode.IO_ERROR, f"{shown} is larger than {max_bytes:,} bytes; it was not read", path=shown
        )
    return data


def read_text(
    root: Path | str, rel: Path | str, *, errors: str = "strict", max_bytes: int = DEFAULT_MAX_BYTES,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> str:  # fmt: skip
    """UTF-8 text of a regular file below `root` (`errors` as `bytes.decode`)."""
    return read_bytes(root, rel, max_bytes=max_bytes, timeout_s=timeout_s).decode("utf-8", errors=errors)


def read_head_tail(
    root: Path | str, rel: Path | str, *, max_bytes: int, timeout_s: float = DEFAULT_TIMEOUT_S, cut: bytes = b""
) -> bytes:
    """A regular file whole when it holds at most `max_bytes`, else its first quarter and last three quarters of
    `max_bytes` joined by `cut`."""
    deadline = time.monotonic() + timeout_s
    fd, shown = _open_file(root, rel)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        size = os.fstat(fd).st_size
        if size <= max_bytes:
            return _read(fh, max_bytes, deadline, shown)  # type: ignore[arg-type]
        head = _read(fh, max_bytes // 4, deadline, shown)  # type: ignore[arg-type]
        fh.seek(size - max_bytes * 3 // 4)
        return head + cut + _read(fh, max_bytes * 3 // 4, deadline, shown)  # type: ignore[arg-type]


def kind(root: Path | str, rel: Path | str) -> Kind:
    """What `rel` is, never following a link: `link` when it, or a folder on its way, is one."""
    try:
        st = lstat(root, rel)
    except GraphLemonError as exc:
        if is_refusal(exc) and exc.context.get("kind") == "link":
            return "link"
        raise
    return _kind_of(st.st_mode) if st is not None else "absent"


def lstat(root: Path | str, rel: Path | str) -> os.stat_result | None:
    """`lstat` of `rel`'s last component, its folders opened without following a link (a link on the way is
    refused); None when it does not exist."""
    parts = parts_of(root, rel)
    if not parts:
        return os.stat(os.fspath(root))
    with _folder(root, parts[:-1]) as dir_fd:
        if dir_fd is None:
            return None
        try:
            return os.lstat(parts[-1], dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return None


def _kind_of(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "other"


def entries(root: Path | str, rel: Path | str = "") -> list[Entry]:
    """The entries of a folder below `root`, sorted by name, each with what it is (links are not followed);
    an absent folder has none."""
    with _folder(root, parts_of(root, rel)) as dir_fd:
        if dir_fd is None:
            return []
        listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    out = []
    with os.scandir(listing) as scan:
        for item in scan:
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            out.append(Entry(item.name, _kind_of(st.st_mode), st.st_size))
    os.close(listing)
    return sorted(out, key=lambda e: e.name)


def walk_files(
    root: Path | str, rel: Path | str = "", *, limit: int = 100_000, skip: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """(regular files, everything else met: links and special files) below `rel`, as paths relative to `root`,
    sorted, at most `limit` of each; links to folders are listed, never entered; folders named in `skip` neither.
    One descriptor per folder (`os.fwalk`): a folder swapped for a link while the walk runs is not entered."""
    parts = parts_of(root, rel)
    root_fd = _open_root(root)
    try:
        try:
            top_fd = _walk_dirs(root_fd, parts, "/".join(parts))
        except FileNotFoundError:
            return [], []
    finally:
        os.close(root_fd)
    base = "/".join(parts)
    files: list[str] = []
    skipped: list[str] = []
    try:
        for folder, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=top_fd, follow_symlinks=False):
            where = folder[2:] if folder.startswith("./") else ""
            prefix = "/".join(p for p in (base, where) if p)
            kept = []
            for name in [*dirnames, *filenames]:
                try:
                    mode = os.lstat(name, dir_fd=dir_fd).st_mode
                except OSError:
                    continue
                path = f"{prefix}/{name}" if prefix else name
                if stat.S_ISDIR(mode):
                    if name not in skip:
                        kept.append(name)
                elif stat.S_ISREG(mode):
                    files.append(path)
                elif len(skipped) < limit:
                    skipped.append(path)
            dirnames[:] = sorted(kept)
            if len(files) >= limit:
                break
    finally:
        os.close(top_fd)
    return sorted(files)[:limit], sorted(skipped)


def count_files(root: Path | str, rel: Path | str = "", *, limit: int = 100_000) -> int:
    """How many regular files lie below `rel` (links not followed), counting up to `limit`."""
    return len(walk_files(root, rel, limit=limit)[0])


# -- the host's own changes in such a tree -----------------------------------------------------------------


def write_bytes(root: Path | str, rel: Path | str, data: bytes, *, mode: int = 0o644) -> None:
    """Write `rel` whole (a new file beside it, then renamed over it), its folders made where missing; no link on
    the way is followed, and a link at `rel` itself is replaced, never written through."""
    parts = _file_parts(root, rel)
    with _folder(root, parts[:-1], make=True) as dir_fd:
        tmp = _temp_name(parts[-1])
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), mode)  # whatever the umask
                fh.write(data)
            os.replace(tmp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise


def _file_parts(root: Path | str, rel: Path | str) -> list[str]:
    parts = parts_of(root, rel)
    if not parts:
        raise refused(os.fspath(rel), "not_regular", "is the folder itself, not a file")
    return parts


def readlink(root: Path | str, rel: Path | str) -> str | None:
    """The target of the link `rel` (its folders opened without following a link); None when it is not one."""
    parts = parts_of(root, rel)
    if not parts:
        return None
    with _folder(root, parts[:-1]) as dir_fd:
        try:
            return os.readlink(parts[-1], dir_fd=dir_fd) if dir_fd is not None else None
        except OSError:
            return None


def symlink(root: Path | str, rel: Path | str, target: str) -> None:
    """Make `rel` a link to `target` (replacing a file or link there), its folders made without following a link."""
    parts = _file_parts(root, rel)
    with _folder(root, parts[:-1], make=True) as dir_fd:
        tmp = _temp_name(parts[-1])
        os.symlink(target, tmp, dir_fd=dir_fd)
        os.replace(tmp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def remove(root: Path | str, rel: Path | str) -> bool:
    """Unlink a file or a link (never what a link points at) below `root`, its folders opened without following
    a link. -> whether something was removed (a folder is left alone)."""
    return _remove(root, rel, folders=False)


def remove_tree(root: Path | str, rel: Path | str) -> bool:
    """Remove a folder below `root` and all it holds (`shutil.rmtree` from its parent's descriptor: no link is
    followed, on the way or inside), or a file or link there. -> whether something was removed."""
    return _remove(root, rel, folders=True)


def _remove(root: Path | str, rel: Path | str, *, folders: bool) -> bool:
    parts = parts_of(root, rel)
    if not parts:
        return False
    with _folder(root, parts[:-1]) as dir_fd:
        if dir_fd is None:
            return False
        try:
            if stat.S_ISDIR(os.lstat(parts[-1], dir_fd=dir_fd).st_mode):
                if not folders:
                    return False
                shutil.rmtree(parts[-1], dir_fd=dir_fd)
            else:
                os.unlink(parts[-1], dir_fd=dir_fd)
            return True
        except FileNotFoundError:
            return False


def prune_empty_dirs(root: Path | str, rel_dir: Path | str) -> None:
    """Remove `rel_dir` and the folders above it (up to `root`, excluded) while they are empty."""
    parts = parts_of(root, rel_dir)
    while parts:
        try:
            with _folder(root, parts[:-1]) as dir_fd:
                if dir_fd is None:
                    return
                os.rmdir(parts[-1], dir_fd=dir_fd)
        except (OSError, GraphLemonError):
            return
        parts = parts[:-1]
