from calc import leak_c


def two():
    return leak_c.three() + 1
