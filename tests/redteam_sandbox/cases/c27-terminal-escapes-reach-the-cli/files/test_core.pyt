"""Core arithmetic (SDD 3.1) and test ids carrying terminal escapes."""
import pytest

from calc.core import add, mul


def test_ac1_add():
    assert add(2, 3) == 5


def test_ac2_mul():
    assert mul(2, 3) == 6


@pytest.mark.parametrize("x", [1], ids=["\x1b]0;SBXRED-TITLE\x07\u202eevil"])
def test_escape_id(x):
    assert add(x, x) == 3, "\x1b]52;c;U0JYUkVE\x07\x1b[2J\x1b[31mSBXRED-RED\u202e done"


def test_escape_message():
    assert mul(2, 2) == 5, "\x1b]0;SBXRED-MSG\x07\x1b]8;;http://127.0.0.1:41271/\x07click\x1b]8;;\x07"
