"""leakred payload l73: a failing test with frames in four modules."""
from calc import leak_a


def test_probe_l73_fails():
    leak_a.one()
