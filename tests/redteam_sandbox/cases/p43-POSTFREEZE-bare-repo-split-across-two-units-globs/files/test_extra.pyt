from calc.extra import neg


def test_ac1_neg():
    assert neg(2) == -2
