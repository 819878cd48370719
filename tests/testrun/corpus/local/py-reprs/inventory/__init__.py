"""A small stock book: items, grouping by kind, word counts and lookups."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass


class Item:
    """A stock item; compared by identity (no __eq__), as plain classes are."""

    def __init__(self, name: str, qty: int) -> None:
        self.name = name
        self.qty = qty


@dataclass
class Line:
    name: str
    qty: int


def group_by_kind(pairs: list[tuple[str, str]]) -> defaultdict[str, list[str]]:
    groups: defaultdict[str, list[str]] = defaultdict(list)
    for kind, name in pairs:
        groups[kind].append(name)
    return groups


def count_words(text: str) -> defaultdict[str, int]:
    counts: defaultdict[str, int] = defaultdict(int)
    for word in text.split():
        counts[word.lower()] += 1
    return counts


def find(stock: list[Item], name: str) -> Item | None:
    for item in stock:
        if item.name == name:
            return item
    return None


def restock(line: Line, delivered: int) -> Line:
    return Line(line.name, line.qty + delivered)
