"""Value rules over two texts that are equal but for one small edit: the quotation marks, a separator, the
ending, a part added or a part left out.

Each names the edit exactly (what the produced text has where the expected one has what), so it is true
whenever the sides are; a rule that says which text lacks what needs the reporter to say which text is
expected (`SIDES`), one that holds either way names the operands as the reporter labels them. Digits are
left to the numeric rules (`'10 kB'` against `'9.9 kB'` is a number that differs, not an edit of text).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

from .hint_pair import SIDES, STRINGS, Pair, clip, text_repr
from .hint_premises import Premise, Rule

QUOTES = "'\"`‘’“”„«»"
_SHORT = 12  # an edit longer than this is not "one small edit"
_SHORT_TEXT = 60  # a text this long or shorter is a word or a formatted value, whose ending is chosen


@dataclass(frozen=True)
class Edit:
    """Two texts as a shared start, one middle each, and a shared end."""

    start: str
    expected: str  # the middle of the first (expected) text
    got: str  # the middle of the second
    end: str


def edit_of(expected: str, got: str) -> Edit:
    p = 0
    while p < min(len(expected), len(got)) and expected[p] == got[p]:
        p += 1
    s = 0
    while s < min(len(expected), len(got)) - p and expected[-1 - s] == got[-1 - s]:
        s += 1
    return Edit(expected[:p], expected[p : len(expected) - s], got[p : len(got) - s], expected[len(expected) - s :])


def _texts(p: Pair) -> tuple[str, str]:
    return str(p.expected), str(p.got)


def _shown(p: Pair) -> str:
    """`'b' where 'a' is expected` / `left 'a', right 'b'`: the two whole texts."""
    e, g = _texts(p)
    if p.sided:
        return f"{text_repr(g)} where {text_repr(e)} is expected"
    return f"{p.labels[0]} {text_repr(e)}, {p.labels[1]} {text_repr(g)}"


def _digits(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _punctuation(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P") and ch not in QUOTES


# --- quotation marks -------------------------------------------------------------------------------------


def _quotes_only(p: Pair) -> tuple[str, ...] | None:
    """The quotation marks one text has and the other lacks, when the texts are otherwise equal."""
    e, g = _texts(p)
    if e == g or _unquoted(e) != _unquoted(g):
        return None
    marks = tuple(sorted({c for c in e + g if c in QUOTES and e.count(c) != g.count(c)}))
    return marks or None


def _unquoted(text: str) -> str:
    return "".join(c for c in text if c not in QUOTES)


def _quotes(p: Pair, strings: bool, marks: tuple[str, ...]) -> str:
    e, g = _texts(p)
    named = " ".join(f"`{m}`" for m in marks)
    if not p.sided:
        return f"The texts differ only in quotation marks ({named}): {_shown(p)}."
    more = [m for m in marks if g.count(m) > e.count(m)]
    less = [m for m in marks if g.count(m) < e.count(m)]
    if more and less:  # one mark for another (`'foo bar"` where `"foo bar"`): nothing was only added or left out
        return (f"The text has {' '.join(f'`{m}`' for m in more)} where the expected text has "
                f"{' '.join(f'`{m}`' for m in less)} (quotation marks), and is otherwise the same: {_shown(p)}.")  # fmt: skip
    fewer = bool(less)
    which = "lacks the quotation marks" if fewer else "has quotation marks"
    other = "the expected text has" if fewer else "the expected text lacks"
    return f"The text {which} {named} {other}, and is otherwise the same: {_shown(p)}."


# --- a separator for another -----------------------------------------------------------------------------


def _one_swap(p: Pair) -> tuple[str, str, int] | None:
    """(expected's character, produced character, how many places) when the texts differ only where one character
    stands for another, the same two every time."""
    e, g = _texts(p)
    if len(e) != len(g) or e == g:
        return None
    swaps = {(a, b) for a, b in zip(e, g, strict=True) if a != b}
    if len(swaps) != 1:
        return None
    (a, b) = next(iter(swaps))
    return a, b, sum(1 for x, y in zip(e, g, strict=True) if x != y)


def _separator_swap(p: Pair) -> tuple[str, str, int] | None:
    """`_one_swap` where both characters are punctuation marks."""
    swap = _one_swap(p)
    return swap if swap and _punctuation(swap[0]) and _punctuation(swap[1]) else None


def _separator(p: Pair, strings: bool, swap: tuple[str, str, int]) -> str:
    a, b, n = swap
    places = "one place" if n == 1 else f"{n} places"
    if p.sided:
        lead = f"The separator is {b!r} where {a!r} is expected ({places}: {_shown(p)})"
    else:
        lead = f"The texts differ only in a separator, {a!r} in the {p.labels[0]} text and {b!r} in the {p.labels[1]} one ({places}: {_shown(p)})"
    return f"{lead}."


# --- one character for another (a look-alike, a space for a hyphen) ----------------------------------------------


def _char_swap(p: Pair) -> tuple[str, str, int] | None:
    """`_one_swap` where neither character is a letter or a digit."""
    swap = _one_swap(p)
    return swap if swap and not swap[0].isalnum() and not swap[1].isalnum() else None


def _non_ascii_swap(p: Pair) -> tuple[str, str, int] | None:
    """`_one_swap` where a character outside ASCII stands for another (not the same letter in another case): the two
    may print alike (U+043E for 'o'), so only their code points tell them apart."""
    swap = _one_swap(p)
    if swap is None or (swap[0].isascii() and swap[1].isascii()) or swap[0].casefold() == swap[1].casefold():
        return None
    return swap


def char_name(ch: str) -> str:
    """`'⁻' (U+207B SUPERSCRIPT MINUS)`: a character with its code point and Unicode name."""
    name = unicodedata.name(ch, "")
    return f"{ch!r} (U+{ord(ch):04X}{' ' + name if name else ''})"


def _char_swapped(p: Pair, strings: bool, swap: tuple[str, str, int]) -> str:
    a, b, n = swap
    places = "one place" if n == 1 else f"{n} places"
    if p.sided:
        return f"One character stands for another: {char_name(b)} where {char_name(a)} is expected ({places}: {_shown(p)})."
    return (f"The texts differ only where one character stands for another: {char_name(a)} in the {p.labels[0]} "
            f"text, {char_name(b)} in the {p.labels[1]} one ({places}: {_shown(p)}).")  # fmt: skip


# --- the same number written another way -------------------------------------------------------------------

_NUMERAL = re.compile(r"(?<![\w.,])-?\d+(?:\.\d+)?(?![\w.,]?\d)")


def _renumbered(p: Pair) -> tuple[tuple[str, str], ...] | None:
    """The numerals that differ, when the texts are the same but for numerals that are equal as numbers and
    written another way (`1.0000kB` for `1kB`): each pair (expected's, produced)."""
    e, g = _texts(p)
    ne, ng = _NUMERAL.findall(e), _NUMERAL.findall(g)
    if e == g or not ne or len(ne) != len(ng) or _NUMERAL.sub("#", e) != _NUMERAL.sub("#", g):
        return None
    if any(Decimal(a) != Decimal(b) for a, b in zip(ne, ng, strict=True)):  # exact: no float rounding
        return None
    changed = tuple((a, b) for a, b in zip(ne, ng, strict=True) if a != b)
    return changed or None


def _renumbered_says(p: Pair, sided: bool, strings: bool, changed: tuple[tuple[str, str], ...]) -> str:
    a, b = changed[0]
    return (f"The same number written another way: {b} where {a} is expected — equal as numbers, the rest of the "
            f"text the same ({_shown(p)}).")  # fmt: skip


# --- the same words in another order ------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(text) if w]


_WORD_SPLIT = re.compile(r"\W+")


def _reordered_words(p: Pair) -> tuple[str, ...] | None:
    """The words that changed place, when both texts hold the same words (as many of each) in another order and
    their other characters (separators) are the same, in order."""
    e, g = _texts(p)
    we, wg = _words(e), _words(g)
    if e == g or we == wg or sorted(we) != sorted(wg) or len(we) < 2:
        return None
    if _WORD_SPLIT.findall(e) != _WORD_SPLIT.findall(g):
        return None
    return tuple(dict.fromkeys(a for a, b in zip(we, wg, strict=True) if a != b))


def _reordered_says(p: Pair, strings: bool, moved: tuple[str, ...]) -> str:
    return (f"The same words in another order ({', '.join(repr(w) for w in moved[:4])} changed places): "
            f"{_shown(p)}.")  # fmt: skip


# --- two parts swapped around their separator ------------------------------------------------------------

_SEPARATOR_RUN = re.compile(r"[^\w\n]+")


def _swapped_parts(p: Pair) -> tuple[str, str, str, str] | None:
    """(first part, second part, the expected text's separator, the produced one's) when the produced text is the
    expected one's two parts, around one separator (a run of characters that are neither letters, digits nor line
    ends), in the other order: `EOF: read error` for `read error: EOF`. One line each; the split is the only one."""
    e, g = _texts(p)
    if e == g or "\n" in e or "\n" in g:
        return None
    found = []
    for sep in _SEPARATOR_RUN.finditer(e):
        a, b = e[: sep.start()], e[sep.end() :]
        if not a.strip() or not b.strip() or not (g.startswith(b) and g.endswith(a)) or len(g) <= len(a) + len(b):
            continue
        middle = g[len(b) : len(g) - len(a)]
        if _SEPARATOR_RUN.fullmatch(middle):
            found.append((a, b, sep.group(0), middle))
    return found[0] if len(found) == 1 else None


def _swapped_says(p: Pair, strings: bool, swap: tuple[str, str, str, str]) -> str:
    a, b, sep, other = swap
    if p.sided:
        joined = "" if sep == other else f", joined by {other!r} where {sep!r} is expected"
        return f"The two parts come in the other order: {b!r} then {a!r}{joined} ({_shown(p)})."
    joined = "" if sep == other else f" (joined by {sep!r} in the {p.labels[0]} text, {other!r} in the {p.labels[1]})"
    return f"The texts hold the same two parts in the other order{joined}: {a!r} and {b!r} ({_shown(p)})."


# --- the same characters in another order ----------------------------------------------------------------


def _reordered_characters(p: Pair) -> str | None:
    """How the texts' characters moved, when both hold the same characters in another order in one of two ways:
    two neighbours swapped (at character N), or the whole text reversed. Any other anagram is no finding: `'one
    pesos and ten cent'` for `'one peso and ten cents'` holds the same letters by coincidence."""
    e, g = _texts(p)
    if e == g or len(e) < 2 or len(e) != len(g):
        return None
    differ = [i for i, (a, b) in enumerate(zip(e, g, strict=True)) if a != b]
    if len(differ) == 2 and differ[1] == differ[0] + 1 and e[differ[0]] == g[differ[1]] and e[differ[1]] == g[differ[0]]:
        i = differ[0]
        return f"two neighbouring characters swapped at character {i + 1} ({e[i : i + 2]!r} and {g[i : i + 2]!r})"
    return "one text is the other reversed" if e == g[::-1] else None


def _reordered_characters_says(p: Pair, strings: bool, how: str) -> str:
    return f"The texts hold the same characters, {how}: {_shown(p)}."


# --- another ending, a part added, a part left out --------------------------------------------------------


def _other_ending(p: Pair) -> Edit | None:
    """Two short texts (a word, a formatted value) that share a start at least as long as their different endings,
    which are short and hold no digit."""
    if max(map(len, _texts(p))) > _SHORT_TEXT:
        return None
    edit = edit_of(*_texts(p))
    if edit.end or not edit.expected or not edit.got or not edit.start:
        return None
    if max(len(edit.expected), len(edit.got)) > min(_SHORT, len(edit.start)) or _digits(edit.expected + edit.got):
        return None
    return edit


def _ending(p: Pair, sided: bool, strings: bool, edit: Edit) -> str:
    return (f"The text ends in {edit.got!r} where {edit.expected!r} is expected ({_shown(p)}; the start "
            f"{text_repr(edit.start, 40)} is the same).")  # fmt: skip


def _added(p: Pair) -> Edit | None:
    """The produced text is the expected one with one short part added (not at its end, not digits)."""
    edit = edit_of(*_texts(p))
    if edit.expected or not edit.got or not edit.end or len(edit.got) > _SHORT or _digits(edit.got):
        return None
    return edit


def _left_out(p: Pair) -> Edit | None:
    """The produced text is the expected one with one short part left out (not at its end, not digits)."""
    edit = edit_of(*_texts(p))
    if edit.got or not edit.expected or not edit.end or len(edit.expected) > _SHORT or _digits(edit.expected):
        return None
    return edit


def _place(edit: Edit) -> str:
    return f"after {clip(repr(edit.start[-12:]), 20)}" if edit.start else "at the start"


def _added_says(p: Pair, sided: bool, strings: bool, edit: Edit) -> str:
    return f"The text has {edit.got!r} added {_place(edit)} ({_shown(p)})."


def _left_out_says(p: Pair, sided: bool, strings: bool, edit: Edit) -> str:
    return f"The text lacks {edit.expected!r} {_place(edit)} ({_shown(p)})."


TEXT_RULES: tuple[Rule[Pair], ...] = (
    Rule("quotation marks", (STRINGS, Premise("equal but for quotation marks", "the texts are equal once quotation "
         "marks are dropped", _quotes_only)), _quotes),
    Rule("separator replaced", (STRINGS, Premise("one separator for another", "the texts differ only where one "
         "punctuation mark stands for another, the same two every time", _separator_swap)), _separator),
    Rule("a character outside ASCII for another", (STRINGS, Premise("a non-ASCII character for another", "the "
         "texts differ only where one character stands for another, the same two every time, and one of them is not "
         "ASCII (they may print alike: their code points are named)", _non_ascii_swap)), _char_swapped),
    Rule("ending replaced", (SIDES, STRINGS, Premise("another ending", "two short texts (60 characters at most) share "
         "a start at least as long as their different endings, which are short and hold no digit", _other_ending)),
         _ending),
    Rule("a number written another way", (SIDES, STRINGS, Premise("numerals written another way", "the texts are "
         "the same but for numerals that are equal as numbers and written another way", _renumbered)),
         _renumbered_says),
    Rule("same words, another order", (STRINGS, Premise("the same words reordered", "both texts hold the same "
         "words, as many of each, in another order, between the same separators", _reordered_words)),
         _reordered_says),
    Rule("two parts swapped", (STRINGS, Premise("two parts swapped", "one text is the other's two parts, around one "
         "separator, in the other order (one line each, one such split)", _swapped_parts)), _swapped_says),
    Rule("one character for another", (STRINGS, Premise("one character for another", "the texts differ only where "
         "one character, neither a letter nor a digit, stands for another, the same two every time", _char_swap)),
         _char_swapped),
    Rule("same characters, another order", (STRINGS, Premise("the same characters reordered", "one text is the "
         "other with two neighbouring characters swapped, or reversed", _reordered_characters)),
         _reordered_characters_says),
    Rule("part added", (SIDES, STRINGS, Premise("a part added", "the produced text is the expected one with one "
         "short part (no digit) added before its end", _added)), _added_says),
    Rule("part left out", (SIDES, STRINGS, Premise("a part left out", "the produced text is the expected one with one "
         "short part (no digit) left out before its end", _left_out)), _left_out_says),
)  # fmt: skip
