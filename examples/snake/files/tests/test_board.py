import pytest

from snake.board import Board, move, next_head


@pytest.mark.parametrize("direction, expected", [("up", (2, 1)), ("down", (2, 3)), ("left", (1, 2)), ("right", (3, 2))])
def test_ac1_head_moves_one_cell(direction, expected):
    assert next_head((2, 2), direction) == expected


def test_ac1_head_does_not_move_diagonally():
    x, y = next_head((2, 2), "right")
    assert abs(x - 2) + abs(y - 2) == 1


def test_ac2_length_kept_without_growing():
    assert move([(2, 2), (1, 2), (0, 2)], "right") == [(3, 2), (2, 2), (1, 2)]


def test_ac2_growing_adds_one_cell_not_more():
    assert move([(2, 2), (1, 2)], "right", grow=True) == [(3, 2), (2, 2), (1, 2)]


def test_ac3_unknown_direction_rejected():
    with pytest.raises(ValueError):
        next_head((0, 0), "north")


def test_ac3_board_smaller_than_two_is_invalid():
    with pytest.raises(ValueError):
        Board(1, 5)
