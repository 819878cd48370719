def neg(a: int) -> int:
    return -a
