"""Bounds of signed integer types, as numbers and as the text a config file holds."""

from __future__ import annotations


def min_int(bits: int) -> int:
    return -(1 << (bits - 1))


def max_int(bits: int) -> int:
    return (1 << (bits - 1)) - 1


def min_text(bits: int) -> str:
    return str(min_int(bits))


def range_text(bits: int) -> str:
    return f"{min_int(bits)}..{max_int(bits)}"


def describe(bits: int) -> str:
    return f"int{bits}: {max_int(bits) - min_int(bits) + 1} values"
