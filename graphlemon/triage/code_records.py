"""What the code scan reads and finds: a unit's source file, and a route parsed from it (codescan.py, handlers.py)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class SourceFile:
    rel: str  # project-relative path
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


class CodeRoute(BaseModel):
    method: str
    path: str  # normalised, prefixes applied
    file: str
    line: int
    statuses: dict[int, int] = Field(default_factory=dict)  # status -> line that produces it
    throws_at: int | None = None  # a `throw` / `raise` of a non-HTTP error in the handler

    def produces(self, status: int) -> bool:
        return status in self.statuses
