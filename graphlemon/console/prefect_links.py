"""Links from the console to the Prefect UI (without importing Prefect): the UI of the configured API
(`PREFECT_UI_URL`, else `PREFECT_API_URL` without its `/api`), else GraphLemon's local Prefect server while it runs
(docs/prefect.md). A run recorded in a server that is gone (a temporary one) gets no link: only its id."""

from __future__ import annotations

import os
import threading
import time

CACHE_S = 10.0  # the local server's status is an HTTP request: asked at most this often
_cache: dict[str, tuple[float, str | None]] = {}
_lock = threading.Lock()


def prefect_ui() -> str | None:
    configured = os.environ.get("PREFECT_UI_URL") or os.environ.get("PREFECT_API_URL")
    if configured:
        return configured.rstrip("/").removesuffix("/api")
    with _lock:
        at, ui = _cache.get("local", (0.0, None))
        if time.monotonic() - at < CACHE_S:
            return ui
    ui = _local_ui()
    with _lock:
        _cache["local"] = (time.monotonic(), ui)
    return ui


def _local_ui() -> str | None:
    from .. import local_server
    from ..errors import GraphLemonError

    try:
        status = local_server.status(local_server.state_dir())
    except GraphLemonError:
        return None
    return status["ui"] if status["state"] == "running" else None


def flow_run_links(runs: list[dict]) -> list[dict]:
    """Each `{flow_run_id, ts}` with its `url` in the Prefect UI (None when no UI is known)."""
    ui = prefect_ui() if runs else None
    return [{**r, "url": f"{ui}/runs/flow-run/{r['flow_run_id']}" if ui else None} for r in runs]
