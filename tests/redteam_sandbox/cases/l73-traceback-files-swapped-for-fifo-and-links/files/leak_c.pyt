from calc import leak_d


def three():
    return leak_d.four() + 1
