import pytest

from snake.board import Board
from snake.collision import hits_self, hits_wall

BOARD = Board(10, 10)


@pytest.mark.parametrize("head", [(-1, 3), (3, -1)])
def test_ac1_left_and_top_walls_are_hit(head):
    assert hits_wall(head, BOARD)


def test_ac1_right_wall_is_hit():
    assert hits_wall((10, 3), BOARD)


def test_ac1_bottom_wall_is_hit():
    assert hits_wall((3, 10), BOARD)


@pytest.mark.parametrize("head", [(0, 0), (9, 9), (9, 0), (0, 9), (5, 5)])
def test_ac2_cells_on_the_board_are_not_a_wall_hit(head):
    assert not hits_wall(head, BOARD)


def test_ac3_head_on_the_body_is_a_self_hit():
    assert hits_self([(2, 2), (3, 2), (3, 3), (2, 3), (2, 2)])


def test_ac3_straight_snake_is_not_a_self_hit():
    assert not hits_self([(4, 2), (3, 2), (2, 2)])
