"""Integration cases from .graphlemon/integration/spec.json (case id in each test name)."""

from snake.board import Board
from snake.game import Game


def test_eat_food_grows_the_snake_and_adds_ten_points():
    g = Game(Board(6, 6), [(1, 1), (0, 1)], "right", food=(2, 1))
    g.step()
    assert g.body == [(2, 1), (1, 1), (0, 1)]
    assert g.score == 10 and g.food not in g.body


def test_wall_ends_game_at_the_right_wall():
    g = Game(Board(6, 6), [(5, 2)], "right")
    g.step()
    assert g.over
