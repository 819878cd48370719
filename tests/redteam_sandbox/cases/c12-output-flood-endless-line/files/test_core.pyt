"""Core arithmetic (SDD 3.1), and a failure message of 30 MB."""
from calc.core import add, mul


def test_ac1_add():
    assert add(2, 3) == 5


def test_ac2_mul():
    assert mul(2, 3) == 6


def test_huge_message():
    assert add(1, 1) == 3, "B" * (30 << 20)
