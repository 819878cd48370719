"""Our own last-failed store: `<project>/.graphlemon/testrun/last_failed.json`.

Per framework and run folder, the selectors (framework-specific ids) of the tests
that failed last. After each run failed tests are added and passed ones removed;
tests that did not run keep their state (like pytest's cache). The file is
written atomically; an unreadable one is reported in the log and started afresh.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .. import beneath
from ..errors import GraphLemonError
from ..test_counts import STATE_DIR
from .frameworks.framework import selector_file
from .result_models import TestCase

log = logging.getLogger(__name__)
STORE_FILE = Path(STATE_DIR) / "testrun" / "last_failed.json"
MAX_STORE_BYTES = 32 * 1024 * 1024


class LastFailedStore:
    """Read and written through the safe reader (`beneath`): the store lies in the work tree a test run may write,
    so a link or a FIFO there is never followed (an unreadable store starts afresh; it is written over the link)."""

    def __init__(self, project_dir: Path) -> None:
        self.root = Path(project_dir)
        self.path = self.root / STORE_FILE

    def failed(self, framework: str, run_key: str) -> list[str]:
        return list(self._load().get(framework, {}).get(run_key, []))

    def record(self, framework: str, run_key: str, cases: list[TestCase]) -> None:
        data = self._load()
        current = dict.fromkeys(data.get(framework, {}).get(run_key, []))
        failed_now = {c.selector for c in cases if c.selector and c.status == "failed"}
        files_that_ran = {selector_file(c.selector) for c in cases if c.selector and not _file_level(c.selector)}
        for stored in list(current):  # a file that failed to load / build, and ran tests this time
            if _file_level(stored) and stored not in failed_now and selector_file(stored) in files_that_ran:
                del current[stored]
        for case in cases:
            if not case.selector:
                continue
            if case.status == "failed":
                current[case.selector] = None
            elif case.status == "passed":
                current.pop(case.selector, None)
        data.setdefault(framework, {})[run_key] = list(current)
        self._save(data)

    def _load(self) -> dict[str, dict[str, list[str]]]:
        try:
            raw = json.loads(beneath.read_text(self.root, STORE_FILE, max_bytes=MAX_STORE_BYTES))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, GraphLemonError) as exc:
            log.warning("last-failed store %s is unreadable (%s); starting afresh", self.path, exc)
            return {}
        frameworks = raw.get("frameworks") if isinstance(raw, dict) else None
        if not isinstance(frameworks, dict):
            return {}
        clean: dict[str, dict[str, list[str]]] = {}
        for name, runs in frameworks.items():
            if isinstance(runs, dict):
                clean[name] = {k: [s for s in v if isinstance(s, str)] for k, v in runs.items() if isinstance(v, list)}
        return clean

    def _save(self, data: dict[str, dict[str, list[str]]]) -> None:
        text = json.dumps({"version": 1, "frameworks": data}, ensure_ascii=False, indent=1)
        try:
            beneath.write_bytes(self.root, STORE_FILE, text.encode("utf-8"))
        except (OSError, GraphLemonError) as exc:
            log.warning("could not write the last-failed store %s: %s", self.path, exc)


def _file_level(selector: str) -> bool:
    """A whole-file (or whole-package) selector: `tests/x.py`, `tests/x.test.js<TAB>`, `broken<TAB>`."""
    return selector == selector_file(selector) or selector == selector_file(selector) + "\t"
