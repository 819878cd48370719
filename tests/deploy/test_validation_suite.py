"""The validation suite a project declares (`[tool.graphlemon] validate` in pyproject.toml): the Validator of a
self-hosted GraphLemon runs a bounded suite instead of the whole one (docs/deploy.md, "Self-development")."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlemon.errors import GraphLemonError
from graphlemon.stages.validation_suite import declared_suite

ROOT = Path(__file__).resolve().parents[2]


def _declare(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.graphlemon]\n' + body)


def test_graphlemon_declares_its_unit_tier():
    suite = declared_suite(ROOT, ["tests/skills/"])
    assert suite.declared and not suite.missing and suite.targets == ["tests", "tests/skills/"]
    assert suite.marker == "not system" and suite.env() == {"PYTEST_ADDOPTS": "-m 'not system'"}
    assert "marked 'not system'" in suite.describe()


def test_declarations_missing_hostile_and_malformed(tmp_path):
    (tmp_path / "tests" / "a").mkdir(parents=True)
    assert not declared_suite(tmp_path).declared  # no pyproject: the whole suite
    _declare(tmp_path, 'validate = ["tests/a", "tests/gone.py", "../outside", "/etc/passwd"]\n')
    suite = declared_suite(tmp_path, ["tests/a", "tests/u/*", "../../x"])
    assert suite.targets == ["tests/a"] and suite.missing == ["tests/gone.py", "../outside", "/etc/passwd"]
    assert "declared but missing here" in suite.describe()
    _declare(tmp_path, 'validate = ["tests/gone.py"]\n')
    assert declared_suite(tmp_path).targets == [] and "the whole suite" in declared_suite(tmp_path).describe()
    _declare(tmp_path, 'validate = ["tests/a"]\nvalidate_marker = "not system and not slow"\n')
    assert declared_suite(tmp_path).env() == {"PYTEST_ADDOPTS": "-m 'not system and not slow'"}
    bad_markers = ('validate = ["tests/a"]\nvalidate_marker = ""\n', 'validate = ["tests/a"]\nvalidate_marker = 1\n')
    for body in ('validate = "tests"\n', "validate = [1]\n", 'validate = [""]\n', "validate = [\n", *bad_markers):
        _declare(tmp_path, body)
        with pytest.raises(GraphLemonError) as exc:
            declared_suite(tmp_path)
        assert exc.value.code == "INVALID_PARAM"
