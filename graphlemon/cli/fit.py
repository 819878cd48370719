"""Tables that fit the terminal: at 80 or 120 columns a header never breaks inside a word,
an id never wraps (task ids are shown whole; every TASK_ID argument also takes a unique prefix),
and the columns that do not fit are left out, most important first kept, with a line saying how many; `--wide`
asks for every column (the table is then as wide as it needs, wider than the terminal if it must). JSON, CSV and
markdown output are not affected.

    cols = [Col("task_id", whole=True), Col("status", whole=True), Col("goal")]
    print_fitted(out, "3 task(s)", cols, rows, wide=False, priority=["task_id", "status", "goal"])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

TEXT_FLOOR = 16  # a prose column (goal, summary, title) is not squeezed below this many characters
WORD_CAP = 24  # ... nor below its longest word, up to this many characters (longer ones fold)
MIN_ID = 12  # `task-2026120…`: a shortened id keeps at least this many characters


@dataclass(frozen=True)
class Col:
    name: str
    whole: bool = False  # ids, statuses, numbers, times: never wrapped, the column is as wide as its widest value


def unique_prefixes(ids: Iterable[str], minimum: int = MIN_ID) -> dict[str, str]:
    """Each id -> its shortest prefix (at least `minimum` characters) that no other id starts with."""
    ordered = sorted(set(ids))
    short: dict[str, str] = {}
    for i, this in enumerate(ordered):
        need = minimum
        for other in ordered[max(0, i - 1) : i] + ordered[i + 1 : i + 2]:  # in sorted order the neighbours share most
            need = max(need, len(os.path.commonprefix([this, other])) + 1)
        short[this] = this[:need]
    return short


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def column_widths(
    cols: Sequence[Col], rows: Sequence[Sequence[str | Text]], width: int, wide: bool, priority: Sequence[str] = ()
) -> dict[int, int]:
    """{column index: content width} for the columns shown at `width` terminal columns (all of them if `wide`).

    A column's floor is its header's longest word and, for a `whole` column, its widest value; a prose column gets
    at least TEXT_FLOOR and its longest word (up to WORD_CAP). Columns are taken in `priority` order (then table order) while their floors fit; what is
    left of the width is shared out up to each column's widest value."""
    natural, floor = [], []
    for i, col in enumerate(cols):
        cells = [_plain(row[i]) for row in rows]
        widest = max((max((cell_len(part) for part in c.splitlines()), default=0) for c in cells), default=0)
        natural.append(max(cell_len(col.name), widest, 1))
        words = min(max((_longest_word(c) for c in cells), default=0), WORD_CAP)  # a word is not cut if it can be
        body = widest if col.whole else max(min(natural[i], TEXT_FLOOR), words)
        floor.append(max(_longest_word(col.name), body, 1))
    ranked = [i for name in priority for i, c in enumerate(cols) if c.name == name]
    order = list(dict.fromkeys([*ranked, *range(len(cols))]))
    chosen: list[int] = []
    for i in order:
        if wide or not chosen or _table_width([floor[j] for j in [*chosen, i]]) <= width:
            chosen.append(i)
    spare = max(0, width - _table_width([floor[i] for i in chosen]))
    wants = {i: natural[i] - floor[i] for i in chosen}
    total = sum(wants.values())
    if total <= spare:
        return {i: natural[i] for i in sorted(chosen)}
    return {i: floor[i] + spare * wants[i] // total for i in sorted(chosen)}


def _table_width(widths: Sequence[int]) -> int:
    """Rich's default table: one space of padding either side of each cell, a border between and around columns."""
    return sum(widths) + 3 * len(widths) + 1


def print_fitted(
    out,
    title: str,
    cols: Sequence[Col],
    rows: Sequence[Sequence[str | Text]],
    wide: bool = False,
    priority: Sequence[str] = (),
    more: str = "--wide shows all",
) -> None:
    """Print rows as a table that fits `out` (a rich Console), with a note naming the columns left out."""
    from rich.console import Console
    from rich.table import Table

    widths = column_widths(cols, rows, out.width, wide, priority)
    table = Table(title=Text(title), title_justify="left")
    for i, width in widths.items():
        table.add_column(Text(cols[i].name), width=width, no_wrap=cols[i].whole, overflow="fold")
    for row in rows:
        table.add_row(*(row[i] if isinstance(row[i], Text) else Text(str(row[i])) for i in widths))
    needed = _table_width(list(widths.values()))
    if needed > out.width:  # --wide: as wide as the table needs (a pager with -S scrolls it)
        out = Console(file=out.file, width=needed, markup=False, emoji=False, force_terminal=out.is_terminal,
                      color_system=out.color_system)  # fmt: skip
    out.print(table)
    hidden = [c.name for i, c in enumerate(cols) if i not in widths]
    if hidden:
        out.print(f"… {len(hidden)} more column(s) ({', '.join(hidden)}): {more}", highlight=False)
