"""extract_evidence (docs/triage.md, "Evidence"): is every evidence quote really in the file it names?

An evidence item is `"path: quote"` or `"path:line: quote"`. The path is relative
to the project root (a seed-style path such as `units/x/contract.json` is also
looked up under `.graphlemon/`); absolute paths, `..` and symlinks that leave the
project are refused. Matching ignores case and runs of whitespace. With a line
number the match must start on that line; without one the quote needs at least
`MIN_QUOTE_CHARS` characters, so that a two-letter "quote" cannot pass as evidence.
Files are streamed, so a multi-gigabyte process.log is searched in constant memory.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TextIO

from pydantic import BaseModel, Field

from .. import beneath
from ..errors import ErrorCode, GraphLemonError

STATE_DIR = ".graphlemon"
MIN_QUOTE_CHARS = 8
MIN_LINE_QUOTE_CHARS = 3
MAX_EVIDENCE_CHARS = 2000

_ITEM = re.compile(r"^(?P<path>[^:\n]+?)(?::(?P<line>\d+))?: (?P<quote>.+)$", re.DOTALL)
_QUOTE_EDGE = re.compile(r"^['\"`]|['\"`]$")


class EvidenceCheck(BaseModel):
    """The verdict on one evidence item."""

    evidence: str
    ok: bool
    reason: str | None = None
    hit_file: str | None = None  # project-relative path of the file that holds the quote
    line: int | None = None  # line where the quote was found (or ends, for a multi-line quote)


class EvidenceReport(BaseModel):
    """verify_all's answer: ok only if every item verified."""

    ok: bool
    results: list[EvidenceCheck] = Field(default_factory=list)
    failed: list[EvidenceCheck] = Field(default_factory=list)


def normalize(text: str) -> str:
    """Lower case, every run of whitespace collapsed to one space."""
    return " ".join(text.split()).lower()


def resolve_in_project(root: Path, rel: str) -> Path:
    """The file `rel` names inside the project, or SANDBOX_VIOLATION / INVALID_PARAM.

    Refused: empty paths, absolute paths (POSIX, Windows, `~`), any `..` component, NUL bytes,
    and paths whose real location (symlinks followed) is outside the project root.
    """
    rel = rel.strip()
    if not rel or "\x00" in rel:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, "evidence path is empty or contains a NUL byte")
    if (
        rel.startswith("~")
        or PurePosixPath(rel).is_absolute()
        or PureWindowsPath(rel).is_absolute()
        or PureWindowsPath(rel).drive
    ):
        raise GraphLemonError(
            ErrorCode.SANDBOX_VIOLATION, f"absolute path {rel!r} refused: evidence paths are project-relative", path=rel
        )
    parts = re.split(r"[\\/]+", rel)
    if ".." in parts:
        raise GraphLemonError(
            ErrorCode.SANDBOX_VIOLATION, f"path {rel!r} refused: '..' may not leave the project", path=rel
        )
    real_root = Path(os.path.realpath(root))
    candidates = [real_root / rel]
    if parts[0] != STATE_DIR:
        candidates.append(real_root / STATE_DIR / rel)
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        if not real.is_relative_to(real_root):
            raise GraphLemonError(
                ErrorCode.SANDBOX_VIOLATION,
                f"path {rel!r} refused: it resolves outside the project (symlink?)",
                path=rel,
            )
        if real.exists():
            return real
    return candidates[0]


def verify_one(root: Path, evidence: str) -> EvidenceCheck:
    """Check one `"path: quote"` / `"path:line: quote"` item against the project at `root`."""
    if not isinstance(evidence, str) or len(evidence) > MAX_EVIDENCE_CHARS:
        return EvidenceCheck(evidence=str(evidence)[:200], ok=False,
                             reason=f"malformed: not a string of at most {MAX_EVIDENCE_CHARS} characters")  # fmt: skip
    m = _ITEM.match(evidence.strip())
    if m is None:
        return EvidenceCheck(evidence=evidence, ok=False, reason='malformed: need "path: quote" or "path:line: quote"')
    rel = _QUOTE_EDGE.sub("", m["path"].strip())
    quote = normalize(_QUOTE_EDGE.sub("", m["quote"].strip()))
    line = int(m["line"]) if m["line"] else None
    if len(quote) < (MIN_LINE_QUOTE_CHARS if line else MIN_QUOTE_CHARS):
        return EvidenceCheck(evidence=evidence, ok=False,
                             reason=f"quote too short to verify: {quote!r} (give a line number or quote more)")  # fmt: skip
    try:
        path = resolve_in_project(root, rel)
    except GraphLemonError as exc:
        return EvidenceCheck(evidence=evidence, ok=False, reason=exc.message)
    real_root = Path(os.path.realpath(root))
    if beneath.kind(real_root, path) in ("absent", "dir"):
        return EvidenceCheck(evidence=evidence, ok=False, reason=f"file not found: {rel}")
    try:
        with _text(real_root, path) as fh:  # the safe reader: a link or a FIFO is refused, never followed
            found = _match_at_line(fh, quote, line) if line else _find(fh, quote)
    except FileNotFoundError:
        return EvidenceCheck(evidence=evidence, ok=False, reason=f"file not found: {rel}")
    except GraphLemonError as exc:
        return EvidenceCheck(evidence=evidence, ok=False, reason=exc.message)
    hit_file = path.relative_to(real_root).as_posix()
    if isinstance(found, str):
        return EvidenceCheck(evidence=evidence, ok=False, reason=found, hit_file=hit_file)
    if found is None:
        return EvidenceCheck(
            evidence=evidence, ok=False, reason="quote not found in file", hit_file=hit_file, line=line
        )
    return EvidenceCheck(evidence=evidence, ok=True, hit_file=hit_file, line=found)


def verify_all(root: Path, evidence: Iterable[str]) -> EvidenceReport:
    """extract_evidence(pid, evidence[]) -> {ok, results[], failed[]}: every quote checked, the failed ones listed."""
    results = [verify_one(root, item) for item in evidence]
    failed = [r for r in results if not r.ok]
    return EvidenceReport(ok=not failed, results=results, failed=failed)


def cite(rel: str, line: int | None, quote: str) -> str:
    """Format an evidence item (what the deterministic triager writes)."""
    quote = " ".join(quote.split())
    return f"{rel}:{line}: {quote}" if line else f"{rel}: {quote}"


# -- matching ------------------------------------------------------------------------------


@contextmanager
def _text(root: Path, path: Path) -> Iterator[TextIO]:
    """A file of the project opened through the safe reader (no link, no FIFO), streamed as text."""
    with beneath.open_regular(root, path) as raw:
        yield io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace")  # type: ignore[arg-type]


def _find(fh: TextIO, quote: str) -> int | None:
    """Stream the file; the line on which the (whitespace-normalised) quote ends, or None."""
    keep = len(quote)
    buf = ""
    for lineno, raw in enumerate(fh, 1):
        piece = normalize(raw)
        if not piece:
            continue
        buf = f"{buf} {piece}" if buf else piece
        if quote in buf:
            return lineno
        buf = buf[-keep:]
    return None


def _match_at_line(fh: TextIO, quote: str, line: int) -> int | str | None:
    """The quote must start on `line` (it may continue on the following lines)."""
    for lineno, raw in enumerate(fh, 1):
        if lineno == line:
            first = normalize(raw)
            text = first
            for more in fh:
                if len(text) >= len(first) + len(quote):
                    break
                text = f"{text} {normalize(more)}".strip()
            at = text.find(quote)
            return line if 0 <= at < max(len(first), 1) else None
    return f"line {line} is beyond the end of the file"
