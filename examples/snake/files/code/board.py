"""Board and movement (SDD 3.1)."""

from dataclasses import dataclass

Point = tuple[int, int]
DIRECTIONS: dict[str, Point] = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


@dataclass(frozen=True)
class Board:
    width: int
    height: int

    def __post_init__(self) -> None:
        if self.width < 2 or self.height < 2:
            raise ValueError("a board is at least 2 x 2")


def next_head(head: Point, direction: str) -> Point:
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}")
    dx, dy = DIRECTIONS[direction]
    return (head[0] + dx, head[1] + dy)


def move(body: list[Point], direction: str, grow: bool = False) -> list[Point]:
    """The new head goes first; the tail drops unless the snake grows."""
    moved = [next_head(body[0], direction), *body]
    return moved if grow else moved[:-1]
