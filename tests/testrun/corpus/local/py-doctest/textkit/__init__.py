"""Small text helpers, documented by example (the examples run as doctests)."""

from __future__ import annotations

import re


def slugify(title: str) -> str:
    """A URL slug: lower case, words joined by hyphens.

    >>> slugify("Hello World")
    'hello-world'
    >>> slugify("  Already-a slug ")
    'already-a-slug'
    """
    words = re.findall(r"[A-Za-z0-9]+", title)
    return "-".join(w.lower() for w in words)


def word_count(text: str) -> int:
    """The number of words, however they are spaced.

    >>> word_count("one two  three")
    3
    >>> word_count("")
    0
    """
    return len(text.split())
