from bounds import describe, max_int, min_text, range_text


def test_min_text_16():
    assert min_text(16) == "-32768"


def test_min_text_64():
    assert min_text(64) == "-9223372036854775808"


def test_max_int_8():
    assert max_int(8) == 127


def test_range_text_8():
    assert range_text(8) == "-128..127"


def test_describe_8():
    assert describe(8) == "int8: 256 values"
