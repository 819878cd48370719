"""Core arithmetic (SDD 3.1) and failure messages carrying markup."""
from calc.core import add, mul


def test_ac1_add():
    assert add(2, 3) == 5


def test_ac2_mul():
    assert mul(2, 3) == 6


def test_markup_message():
    assert add(1, 1) == 3, (
        "<img src=x onerror=alert(1)> <script>alert('sbxred')</script> "
        "[sbxred-link](javascript:alert(document.cookie)) "
        "![sbxred-pixel](http://127.0.0.1:41281/pixel-c28) <a href=\"javascript:alert(2)\">sbxred-a</a>"
    )
