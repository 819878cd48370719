"""A path's state before a turn (or a run), kept so a revert puts it back byte for byte — or does not touch it.

`Keeper.look(root, rel)` records what a path is (file, link, absent, other), its mode, size and mtime, and
keeps what is needed to put it back: a file's bytes in memory up to `in_memory` bytes, a larger file as a
copy in a private folder while the keeper's `spill` budget lasts, a link's target. Every read goes through
the safe reader (`beneath`): no link on the way is followed, a FIFO is never opened.

`put_back(root, rel, before)` makes the path what it was, through `beneath` too (no link on the way followed,
a link at the path replaced, never written through). It acts only when it can do so exactly: a path that
was absent is removed; a file or link whose bytes were kept is written back. Anything else — a file whose bytes
were not kept (past both caps), something that is not a file — is left as it is, and `put_back` says so
(False): GraphLemon never deletes what it cannot restore.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .. import beneath
from ..errors import GraphLemonError

IN_MEMORY_BYTES = 20_000_000  # a file's bytes kept in memory up to this size
SPILL_BYTES = 256_000_000  # larger files copied aside, up to this much per keeper
Kind = Literal["file", "link", "absent", "other"]


@dataclass(frozen=True)
class KeptState:
    kind: Kind
    mode: int = 0  # permission bits
    size: int = 0
    mtime_ns: int = 0
    data: bytes | None = None  # a file's bytes or a link's target, when kept in memory
    copy: str | None = None  # a large file's kept copy

    @property
    def executable(self) -> bool:
        return bool(self.mode & 0o111)

    @property
    def kept(self) -> bool:
        """Whether `put_back` can make the path exactly this again."""
        if self.kind == "absent":
            return True
        return self.kind in ("file", "link") and (self.data is not None or self.copy is not None)

    def content(self) -> bytes | None:
        if self.data is not None or self.copy is None:
            return self.data
        with open(self.copy, "rb") as fh:
            return fh.read()


ABSENT = KeptState("absent")


class Keeper:
    """Looks at paths and keeps their bytes within its caps; its copies live as long as it does."""

    def __init__(self, *, in_memory: int = IN_MEMORY_BYTES, spill: int = SPILL_BYTES) -> None:
        self.in_memory, self.spill_left = in_memory, spill
        self._folder: tempfile.TemporaryDirectory | None = None

    def look(self, root: Path | str, rel: str, *, keep: bool = True) -> KeptState:
        """`rel`'s state now; with `keep`, what is needed to put it back (within the caps)."""
        try:
            st = beneath.lstat(root, rel)
        except GraphLemonError as exc:
            if beneath.is_refusal(exc):  # a link on its way: git sees the link, which is judged on its own
                return KeptState("other")
            raise
        if st is None:
            return ABSENT
        if stat.S_ISLNK(st.st_mode):
            target = beneath.readlink(root, rel)
            return KeptState("link", 0, st.st_size, st.st_mtime_ns, os.fsencode(target) if target is not None else None)
        if not stat.S_ISREG(st.st_mode):
            return KeptState("other", 0, 0, st.st_mtime_ns)
        state = KeptState("file", stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns)
        if not keep:
            return state
        try:
            if st.st_size <= self.in_memory:
                return _with(state, data=beneath.read_bytes(root, rel, max_bytes=self.in_memory))
            if st.st_size <= self.spill_left:
                self.spill_left -= st.st_size
                return _with(state, copy=self._copy(root, rel))
        except (OSError, GraphLemonError):
            pass  # changed under us (a FIFO now, gone): not kept, so never deleted
        return state

    def _copy(self, root: Path | str, rel: str) -> str:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="graphlemon-kept-")  # 0700, removed with the keeper
        fd, copy = tempfile.mkstemp(dir=self._folder.name)
        with beneath.open_regular(root, rel) as src, os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst, 1024 * 1024)
        return copy


def _with(state: KeptState, **fields) -> KeptState:
    return KeptState(**{**state.__dict__, **fields})


def look(root: Path | str, rel: str) -> KeptState:
    """A path's state now, nothing kept (to compare with a kept one)."""
    return _PLAIN.look(root, rel, keep=False)


def unchanged(root: Path | str, rel: str, before: KeptState, now: KeptState | None = None) -> bool:
    """Whether `rel` is what `before` was: kind, mode and size, then the bytes when they were kept (a file put
    back byte for byte is unchanged whatever its mtime), else the mtime."""
    now = now or look(root, rel)
    if (now.kind, now.mode, now.size) != (before.kind, before.mode, before.size):
        return False
    if now.kind == "link":
        return now.data == before.data
    if now.kind != "file" or not before.kept:
        return now.mtime_ns == before.mtime_ns
    try:
        with beneath.open_regular(root, rel) as fh:
            if before.data is not None:
                return fh.read(before.size + 1) == before.data
            with open(before.copy, "rb") as kept:  # type: ignore[arg-type]
                return _same_stream(fh, kept)
    except (OSError, GraphLemonError):
        return False


def _same_stream(a, b, chunk: int = 1024 * 1024) -> bool:
    while True:
        x, y = a.read(chunk), b.read(chunk)
        if x != y:
            return False
        if not x:
            return True


_PLAIN = Keeper(in_memory=0, spill=0)


def put_back(root: Path | str, rel: str, before: KeptState) -> bool:
    """Make `rel` what `before` was, when that can be done exactly; otherwise touch nothing. -> done."""
    if not before.kept:
        return False
    now = beneath.kind(root, rel)
    if now == "dir":
        return False  # a folder where a file was: never removed wholesale
    if before.kind == "absent":
        if now != "link" or link_on_the_way(root, rel) is None:
            beneath.remove(root, rel)
            beneath.prune_empty_dirs(root, posixpath.dirname(rel))
        return True  # below a link there is nothing of the tree's: the link is judged on its own
    link = link_on_the_way(root, rel)
    if link is not None:  # the folders held this file before: a link in their place is the turn's, removed
        beneath.remove(root, link)
    if before.kind == "link":
        beneath.symlink(root, rel, os.fsdecode(before.data or b""))
        return True
    data = before.content()
    if data is None:
        return False
    beneath.write_bytes(root, rel, data, mode=before.mode or 0o644)
    return True


def link_on_the_way(root: Path | str, rel: str) -> str | None:
    """The first folder of `rel` (not `rel` itself) that is a link now, or None."""
    parts = beneath.parts_of(root, rel)
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        kind = beneath.kind(root, prefix)
        if kind == "link":
            return prefix
        if kind != "dir":
            return None
    return None
