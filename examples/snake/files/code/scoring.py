"""Scoring and food (SDD 3.3)."""

import random

from snake.board import Board, Point

FOOD_POINTS = 10


def eat(score: int) -> int:
    return score + FOOD_POINTS


def place_food(board: Board, body: list[Point], rng: random.Random) -> Point | None:
    """A free cell chosen with rng, never on the snake; None when the board is full."""
    taken = set(body)
    free = [(x, y) for y in range(board.height) for x in range(board.width) if (x, y) not in taken]
    return rng.choice(free) if free else None
