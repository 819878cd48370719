from snake.board import Board
from snake.game import Game, simulate


def test_ac1_step_moves_the_snake():
    g = Game(Board(5, 5), [(1, 1)], "right")
    g.step()
    assert g.body == [(2, 1)] and not g.over


def test_ac1_wall_hit_ends_the_game_not_wraps():
    g = Game(Board(5, 5), [(4, 1)], "right")
    g.step()
    assert g.over and g.body == [(4, 1)]


def test_ac1_self_hit_ends_the_game():
    g = Game(Board(6, 6), [(2, 2), (3, 2), (3, 3), (2, 3), (1, 3)], "down")
    g.step()
    assert g.over


def test_ac2_reversal_is_ignored_not_applied():
    g = Game(Board(6, 6), [(2, 2), (1, 2)], "right")
    g.turn("left")
    assert g.direction == "right"


def test_simulate_plays_every_step():
    assert simulate(steps=200, seed=3) == 200
