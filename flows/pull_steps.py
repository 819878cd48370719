"""Prefect deployment steps of GraphLemon's prefect.yaml.

`code_root` runs on the worker, at run time (a `pull` step): it returns the folder the worker's own installed
GraphLemon lives in (the folder holding the `graphlemon` package: a checkout's root, or site-packages), so a
deployment made from any checkout, on any machine, runs on any worker that has GraphLemon installed — nothing of the
deploying machine's paths is baked in.
"""

from __future__ import annotations

from pathlib import Path

import graphlemon


def code_root() -> dict[str, str]:
    """{"directory": the folder holding the worker's `graphlemon` package}."""
    return {"directory": str(Path(graphlemon.__file__).resolve().parents[1])}
