from collections import defaultdict

from inventory import Item, Line, count_words, find, group_by_kind, restock

STOCK = [Item("apple", 3), Item("pear", 5), Item("leek", 1)]


def test_group_by_kind():
    pairs = [("fruit", "apple"), ("veg", "leek"), ("fruit", "pear")]
    assert group_by_kind(pairs) == defaultdict(list, {"fruit": ["apple", "pear"], "veg": ["leek"]})


def test_group_by_kind_empty():
    assert group_by_kind([]) == {}


def test_count_words():
    assert count_words("The cat saw the dog") == defaultdict(int, {"the": 2, "cat": 1, "saw": 1, "dog": 1})


def test_find_returns_the_item():
    assert find(STOCK, "pear") == STOCK[1]


def test_find_missing():
    assert find(STOCK, "plum") is None


def test_restock():
    assert restock(Line("pear", 5), 2) == Line("pear", 7)
