"""Text helpers shared by the parsers: ANSI stripping, clipping, head + tail of an output."""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves), OSC sequences (titles, links), lone escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

TAIL_CHARS = 3000
CUT_MARKER = "\n[... {n} chars cut by graphlemon ...]\n"


def strip_ansi(text: str) -> str:
    """Remove terminal escapes; keep newlines and tabs, and show another control character the runner printed as
    its escape (`bad: \\x00world`: a NUL byte is part of a printed value, and dropping it states another value)."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    # a carriage return redraws the line: keep what was drawn last
    if "\r" in text:
        text = "\n".join(_last_drawn(line) for line in text.split("\n"))
    return visible_controls(text)


def visible_controls(text: str) -> str:
    """Every control character but a newline, a tab and a carriage return written as its escape (`\\x00`)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _last_drawn(line: str) -> str:
    drawn = [part for part in line.split("\r") if part]
    return drawn[-1] if drawn else ""


def head_and_tail(text: str, limit: int = TAIL_CHARS) -> str:
    """At most about `limit` chars: a quarter from the head, the rest from the tail, a marker between."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    cut = len(text) - head - tail
    return text[:head] + CUT_MARKER.format(n=cut) + text[-tail:]


def clip(text: str | None, limit: int) -> str:
    """One string of at most `limit` chars, cut at the end with an ellipsis."""
    if not text:
        return ""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def to_int(value: object) -> int | None:
    """An int from a report field, or None for anything else (garbled reports never raise)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def to_str(value: object) -> str:
    return value if isinstance(value, str) else ""


# a line that opens with one side's label (`expected "a"`, `got: 3`, `want 4`) and names no other side: one value of
# a printed pair (`Expected 'a' but got 'b'` is a whole pair on its line)
_SIDE_WORD = r"\b(?:got|actual|want(?:ed)?|expected)\b"
_SIDE_LINE = re.compile(rf"^[ \t]*(?:(?P<got>got|actual)|want(?:ed)?|expected)\b(?![^\n]*{_SIDE_WORD})", re.M | re.I)


def labelled_pairs(message: str) -> tuple[str, int] | None:
    """A message that printed several expected/got pairs on their own lines (a test's loop of `expected %q` /
    `got %q`): the text up to the end of its first complete pair and how many more lines carry that pair's first
    label (the other pairs); an empty text when its first two labelled lines are not one pair (no pairing is certain).
    None when it printed at most one value per side. A pair's values are never read across two pairs."""
    lines = [(m.start(), m["got"] is not None) for m in _SIDE_LINE.finditer(message)]
    if sum(got for _, got in lines) < 2 and sum(not got for _, got in lines) < 2:
        return None
    if len(lines) < 3 or lines[0][1] == lines[1][1]:
        return "", 0  # the first labelled lines are no pair: nothing is read as one
    others = sum(got == lines[0][1] for _, got in lines[2:])
    return message[: lines[2][0]].rstrip("\n"), others
