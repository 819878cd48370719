"""Game rules (SDD 3.4), composed from board, collision and scoring."""

import random
from dataclasses import dataclass, field

from snake.board import DIRECTIONS, OPPOSITE, Board, Point, move, next_head
from snake.collision import hits_self, hits_wall
from snake.scoring import eat, place_food


@dataclass
class Game:
    board: Board
    body: list[Point]
    direction: str = "right"
    food: Point | None = None
    score: int = 0
    over: bool = False
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def turn(self, direction: str) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"unknown direction {direction!r}")
        if direction != OPPOSITE[self.direction] or len(self.body) == 1:
            self.direction = direction

    def step(self) -> None:
        if self.over:
            return
        head = next_head(self.body[0], self.direction)
        if hits_wall(head, self.board):
            self.over = True
            return
        ate = head == self.food
        body = move(self.body, self.direction, grow=ate)
        if hits_self(body):
            self.over = True
            return
        self.body = body
        if ate:
            self.score = eat(self.score)
            self.food = place_food(self.board, self.body, self.rng)


def simulate(steps: int, seed: int) -> int:
    """Random games on a 10 x 10 board for `steps` steps (a new game when one ends); returns the steps played."""
    rng = random.Random(seed)
    game, played = None, 0
    while played < steps:
        if game is None or game.over:
            game = Game(Board(10, 10), [(5, 5)], rng=rng)
            game.food = place_food(game.board, game.body, rng)
        game.turn(rng.choice(list(DIRECTIONS)))
        game.step()
        played += 1
    return played
