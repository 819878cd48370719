"""Flow parameters every flow reads the same way (kept light: the devloop imports it at start-up)."""

from __future__ import annotations

import os

from graphlemon.errors import invalid_param


def project_dir(project: str | None) -> str:
    """The flow's project: the parameter, else $GRAPHLEMON_PROJECT (set it for scheduled runs)."""
    chosen = project or os.environ.get("GRAPHLEMON_PROJECT")
    if not chosen:
        raise invalid_param("no project: pass the `project` parameter or set GRAPHLEMON_PROJECT for the worker")
    return chosen
