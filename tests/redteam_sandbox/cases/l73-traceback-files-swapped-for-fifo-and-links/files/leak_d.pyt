def four():
    assert 2 + 2 == 5, "leakred l73 failure"
    return 4
