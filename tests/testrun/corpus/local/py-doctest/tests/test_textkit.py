from textkit import slugify, word_count


def test_slugify_empty():
    assert slugify("") == ""


def test_slugify_digits():
    assert slugify("Top 10 Tips") == "top-10-tips"


def test_word_count_newlines():
    assert word_count("a\nb\n") == 2
