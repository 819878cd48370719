"""The validation suite a project declares: what the Validator runs instead of the whole test suite.

A project declares it in its own configuration, in git (so a commit can change it), for a Python project in
`pyproject.toml`:

    [tool.graphlemon]
    validate = ["tests/devloop/test_routing.py", "tests/foundation"]
    validate_marker = "not system"  # optional: pytest's -m, over the targets (PYTEST_ADDOPTS)

The Validator runs the declared targets plus the tests of the task's own units (what the run changed is always
validated), selected by the marker expression when one is declared (pytest only: the units' tests too). Declared
targets that do not exist in the checkout are left out (and said so); with none declared, or none left, the
Validator runs the whole suite. GraphLemon's own repository declares its unit tier (`tests`, `not system`: no
process but git, no server, no browser), so a self-hosted run validates in minutes, not the quarter of an hour the
whole suite takes on two cores (docs/deploy.md, "Self-development").
"""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

from pydantic import BaseModel, Field

from .. import beneath
from ..errors import ErrorCode, GraphLemonError

CONFIG_FILE = "pyproject.toml"
CONFIG_MAX_BYTES = 4 * 1024 * 1024


class ValidationSuite(BaseModel):
    targets: list[str] = Field(default_factory=list)  # empty: the whole suite
    missing: list[str] = Field(default_factory=list)
    marker: str | None = None  # pytest's -m expression over the targets
    declared: bool = False

    def describe(self) -> str:
        if not self.declared:
            return f"no validation suite declared ({CONFIG_FILE} [tool.graphlemon] validate): the whole suite"
        gone = f"; declared but missing here: {', '.join(self.missing)}" if self.missing else ""
        marked = f", marked {self.marker!r}" if self.marker else ""
        if not self.targets:
            return f"the declared validation suite has no target in this checkout: the whole suite{gone}"
        return f"the declared validation suite ({len(self.targets)} target(s){marked}): {' '.join(self.targets)}{gone}"

    def env(self) -> dict[str, str]:
        """What the test run's environment adds: pytest reads the marker from PYTEST_ADDOPTS."""
        return {"PYTEST_ADDOPTS": f"-m {shlex.quote(self.marker)}"} if self.marker and self.targets else {}


def declared_suite(workdir: Path, unit_tests: list[str] | tuple[str, ...] = ()) -> ValidationSuite:
    """The suite `workdir`'s project declares, with `unit_tests` (the task's units' test paths) added to a declared
    one. A malformed declaration is INVALID_PARAM (never a silent whole run)."""
    config = Path(workdir) / CONFIG_FILE
    try:
        text = beneath.read_text(workdir, CONFIG_FILE, max_bytes=CONFIG_MAX_BYTES)  # no link followed, no FIFO
    except FileNotFoundError:
        return ValidationSuite()
    except UnicodeDecodeError as exc:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{config} is not valid UTF-8: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{config} is not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("graphlemon", {})
    declared, marker = table.get("validate"), table.get("validate_marker")
    if declared is None:
        return ValidationSuite()
    if not isinstance(declared, list) or not all(isinstance(t, str) and t.strip() for t in declared):
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM, f"{config}: [tool.graphlemon] validate must be a list of test paths"
        )
    if marker is not None and not (isinstance(marker, str) and marker.strip() and "\n" not in marker):
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM, f"{config}: [tool.graphlemon] validate_marker must be one pytest -m expression"
        )
    root = Path(workdir)
    present = [t for t in declared if _present(root, t)]
    missing = [t for t in declared if t not in present]
    if present:
        own = [t.rstrip("*") for t in unit_tests if t.rstrip("*")]
        present += [t for t in own if _present(root, t) and t not in present]
    return ValidationSuite(targets=present, missing=missing, marker=marker, declared=True)


def _present(root: Path, target: str) -> bool:
    """A file or folder of the checkout, reached without a link (an absolute or `..` target, or one through a
    link, is left out)."""
    try:
        return beneath.kind(root, target.split("::", 1)[0]) in ("file", "dir")
    except GraphLemonError:
        return False
