"""Core arithmetic (SDD 3.1); one test fails so the validator attributes a bug."""
from calc.core import add, mul


def test_ac1_add():
    assert add(2, 3) == 5


def test_ac2_mul():
    assert mul(2, 3) == 6


def test_ac2_mul_negative():
    assert mul(-2, 3) == 6
