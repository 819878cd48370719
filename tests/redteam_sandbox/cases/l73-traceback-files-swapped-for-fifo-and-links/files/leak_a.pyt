from calc import leak_b


def one():
    return leak_b.two() + 1
