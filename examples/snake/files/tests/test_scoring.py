import random

from snake.board import Board
from snake.scoring import eat, place_food


def test_ac1_eating_adds_ten_points():
    assert eat(0) == 10 and eat(30) == 40


def test_ac1_score_never_decreases_when_eating():
    assert eat(5) > 5


def test_ac2_food_is_not_placed_on_the_snake():
    board, body = Board(3, 3), [(0, 0), (1, 0), (2, 0), (0, 1)]
    rng = random.Random(1)
    for _ in range(50):
        assert place_food(board, body, rng) not in body


def test_ac2_full_board_gives_no_food():
    board = Board(2, 2)
    assert place_food(board, [(0, 0), (1, 0), (0, 1), (1, 1)], random.Random(0)) is None
