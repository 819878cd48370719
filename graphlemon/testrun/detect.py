"""Which framework runs a project's tests, and from which folder.

In one folder: package.json's `scripts.test` (the first runner it starts: vitest, jest, mocha,
node:test; any other is npm-test; a runner only listed in devDependencies does not override it),
else its dependencies (vitest, jest, mocha), then Python test configuration (pytest, or unittest when the
interpreter the project would use has no pytest), go.mod (go),
Cargo.toml (cargo), and last a `test/` folder or `*.test.*` files with no runner
dependency (node:test). In a monorepo the folder nearest to the project root wins
(breadth first, a few levels deep, skipping dependency and build folders). Every marker is read through the
safe reader (`beneath`): a link or a FIFO where a marker would be counts as no marker.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from .. import beneath
from ..errors import ErrorCode, GraphLemonError
from .python_env import has_pytest, python_for
from .result_models import FRAMEWORKS, FrameworkName
from .script_runners import runners_of

MAX_DEPTH = 3
MARKER_MAX_BYTES = 8 * 1024 * 1024  # a package.json larger than this is not read
_PYTHON = {"pytest", "unittest"}  # one marker (Python test files, pytest configuration), either runner
_JS = {"vitest", "jest", "mocha", "node", "npm-test"}  # run in their package's root
_SCRIPT_RUNNERS: dict[str, FrameworkName] = {
    "vitest": "vitest", "jest": "jest", "mocha": "mocha", "node:test": "node", "tape": "npm-test", "tap": "npm-test",
    "ava": "npm-test",
}  # fmt: skip
SKIP_DIRS = {"node_modules", ".git", ".venv", "venv", "target", "vendor", "dist", "build", "__pycache__", ".graphlemon"}
PYTEST_CONFIGS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py")
NODE_TEST_SUFFIXES = (".js", ".mjs", ".cjs")
NPM_DEFAULT_TEST = 'echo "Error: no test specified" && exit 1'
ALIASES: dict[str, FrameworkName] = {
    "node:test": "node",
    "node-test": "node",
    "npm": "npm-test",
    "go-test": "go",
    "gotest": "go",
    "go test": "go",
    "cargo-test": "cargo",
    "cargo test": "cargo",
    "rust": "cargo",
}


@dataclass(frozen=True)
class PackageJson:
    dependencies: frozenset[str] = frozenset()
    test_script: str | None = None
    scripts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> PackageJson | None:
        """The folder's package.json (read without following a link; a link, FIFO or folder there is absent)."""
        try:
            data = json.loads(beneath.read_text(directory, "package.json", max_bytes=MARKER_MAX_BYTES))
        except FileNotFoundError:
            return None
        except GraphLemonError as exc:
            return None if beneath.is_refusal(exc) else cls()
        except (OSError, ValueError):
            return cls()
        if not isinstance(data, dict):
            return cls()
        deps: set[str] = set()
        for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
            section = data.get(key)
            if isinstance(section, dict):
                deps.update(str(name) for name in section)
        scripts = data.get("scripts") if isinstance(data.get("scripts"), dict) else {}
        scripts = {str(k): str(v) for k, v in scripts.items()}
        test = scripts.get("test")
        return cls(frozenset(deps), test if test and test.strip() != NPM_DEFAULT_TEST else None, scripts)


def normalise_framework(name: str) -> FrameworkName:
    """A framework name as given by a user (`node:test`, `go test`, ...) → its canonical name."""
    key = name.strip().lower()
    if key in FRAMEWORKS:
        return key  # type: ignore[return-value]
    if key in ALIASES:
        return ALIASES[key]
    raise GraphLemonError(
        ErrorCode.UNKNOWN_FRAMEWORK,
        f"unknown test framework {name!r}; known: {', '.join(FRAMEWORKS)} (aliases: node:test, go test, cargo test)",
        framework=name,
    )


def detect_in(directory: Path) -> FrameworkName | None:
    """The framework whose markers are in this one folder, or None."""
    pkg = PackageJson.read(directory)
    if pkg is not None:
        if pkg.test_script:  # the project's own test command decides, whatever else its dependencies list
            return script_framework(pkg.scripts)
        for runner in ("vitest", "jest", "mocha"):
            if runner in pkg.dependencies:
                return runner  # type: ignore[return-value]
    if any(_is_file(directory, name) for name in PYTEST_CONFIGS) or _has_python_tests(directory):
        # the interpreter the project would use decides: without pytest in it, its tests are unittest's
        return "pytest" if has_pytest(python_for(directory)) else "unittest"
    if _is_file(directory, "go.mod"):
        return "go"
    if _is_file(directory, "Cargo.toml"):
        return "cargo"
    if _has_node_tests(directory):
        return "node"
    return None


def script_framework(scripts: dict[str, str]) -> FrameworkName:
    """The framework of `npm test`: the first test runner its script starts (through `npm run` chains);
    a runner we have no variant for (tape, tap, ava), or none, is `npm-test` (the script as it is)."""
    for runner in runners_of(scripts, "test"):
        if runner in _SCRIPT_RUNNERS:
            return _SCRIPT_RUNNERS[runner]
    return "npm-test"


def detect_framework(project_dir: Path, framework: FrameworkName | None = None) -> tuple[FrameworkName, Path]:
    """(framework, folder to run it in). With `framework` given, finds the nearest folder marked for it.

    A JavaScript framework runs in its package's root (the nearest folder with a package.json, up to the
    project root): a `test/` folder of node:test files inside a package is that package's, never a
    folder to run in of its own (a test reading `process.cwd()` expects the package root)."""
    packages: list[Path] = []
    for directory in _folders_nearest_first(project_dir):
        if PackageJson.read(directory) is not None:
            packages.append(directory)
        found = detect_in(directory)
        if found is None or not (framework is None or found == framework or {found, framework} <= _PYTHON):
            continue
        if found in _JS:
            directory = next((p for p in reversed(packages) if directory.is_relative_to(p)), directory)
        return framework or found, directory
    if framework is not None:
        return framework, project_dir
    raise GraphLemonError(
        ErrorCode.UNKNOWN_FRAMEWORK,
        f"no test framework detected in {project_dir} (looked for package.json, pytest config, go.mod, "
        "Cargo.toml, test/ or *.test.js): `graphlemon test` and `tester run` take --framework; in a DevLoop the "
        "project's own files decide, so the unit's tests or the project's test config must be there",
        project=str(project_dir),
    )


def _folders_nearest_first(root: Path) -> Iterator[Path]:
    """The project's folders, breadth first (links never entered)."""
    level = [""]
    for _depth in range(MAX_DEPTH + 1):
        next_level: list[str] = []
        for rel in level:
            yield root / rel if rel else root
            next_level += [f"{rel}/{e.name}" if rel else e.name for e in _listing(root, rel)
                           if e.kind == "dir" and e.name not in SKIP_DIRS and not e.name.startswith(".")]  # fmt: skip
        level = next_level


def _listing(root: Path, rel: str = "") -> list[beneath.Entry]:
    try:
        return beneath.entries(root, rel)
    except (OSError, GraphLemonError):
        return []


def _is_file(directory: Path, name: str) -> bool:
    try:
        return beneath.kind(directory, name) == "file"
    except GraphLemonError:
        return False


def _has_python_tests(directory: Path) -> bool:
    for sub in ("", "tests", "test"):
        names = [e.name for e in _listing(directory, sub) if e.kind == "file"]
        if any(fnmatch(n, "test_*.py") or fnmatch(n, "*_test.py") for n in names):
            return True
    return False


def _has_node_tests(directory: Path) -> bool:
    try:
        below_test, _ = beneath.walk_files(directory, "test", limit=10_000)
    except (OSError, GraphLemonError):
        below_test = []
    if any(Path(p).suffix in NODE_TEST_SUFFIXES for p in below_test):
        return True
    names = [e.name for e in _listing(directory) if e.kind == "file"]
    return any(".test." in n and Path(n).suffix in NODE_TEST_SUFFIXES for n in names)
