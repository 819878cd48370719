"""Collision (SDD 3.2)."""

from snake.board import Board, Point


def hits_wall(head: Point, board: Board) -> bool:
    """True when the head is outside the board."""
    x, y = head
    return x < 0 or y < 0 or x >= board.width or y >= board.height


def hits_self(body: list[Point]) -> bool:
    return body[0] in body[1:]
