"""The Prefect API of one `graphlemon run` / `resume`, made ready in the background while the command starts.

With `PREFECT_API_URL` configured (from any of Prefect's settings sources: environment, profile, prefect.toml), the
loop uses that API and nothing starts here. Otherwise, in the variant `GRAPHLEMON_PREFECT_SERVER` names:

- `reused` (the default): GraphLemon's local server (graphlemon/local_server.py, docs/prefect.md) — started on the
  first run, found running by the next ones — becomes this command's API;
- `temporary`: Prefect's temporary server, started for this command and stopped with it (seconds of start-up each
  time).

`graphlemon run` and `resume` call `start_in_background()` as their first step: the server is found or boots on the
other core while the command checks its input and imports the loop, and `wait()` is called before the flow starts.
"""

from __future__ import annotations

import atexit
import os
import threading

from graphlemon.errors import ErrorCode, GraphLemonError

STARTUP_S = 120
VARIANTS = ("reused", "temporary")


class TemporaryApi:
    """The background preparation of this command's Prefect API (nothing to do when an API is configured)."""

    def __init__(self) -> None:
        self.imported = threading.Event()  # Prefect is imported: other threads may import it now
        self.error: BaseException | None = None
        self.local_settings: dict[str, str] = {}  # the reused local server's client settings, once it answers
        self._thread = threading.Thread(target=self._start, name="graphlemon-temporary-api", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            from prefect.settings import get_current_settings

            settings = get_current_settings()
            if settings.api.url or not settings.server.ephemeral.enabled:
                return
            if server_variant() == "reused":
                self._reuse_local_server()
                return
            from prefect.server.api.server import SubprocessASGIServer

            self.imported.set()
            # Prefect's 20 s default is too short for a first start (it creates its database) on a busy machine
            SubprocessASGIServer().start(timeout=max(settings.server.ephemeral.startup_timeout_seconds, STARTUP_S))
        except BaseException as exc:  # raised where the flow would have met it: in wait()
            self.error = exc
        finally:
            self.imported.set()

    def _reuse_local_server(self) -> None:
        from graphlemon import local_server

        directory = local_server.state_dir()
        info, _ = local_server.ensure(directory)
        atexit.register(local_server.release_lease, directory)  # a killed command's lease ends with its process
        self.imported.set()
        local_server.wait_ready(directory, info)
        self.local_settings = local_server.client_settings(directory, info)

    def wait(self) -> None:
        """Block until the API answers (or its start failed: then raise that error here). A reused local server
        becomes this process's `PREFECT_API_URL` from here on."""
        self._thread.join()
        if self.error is not None:
            raise self.error
        if self.local_settings:
            from prefect.context import refresh_global_settings_context

            for name, value in self.local_settings.items():  # the URL is this server's; other values set stay
                os.environ[name] = (name != "PREFECT_API_URL" and os.environ.get(name)) or value
            refresh_global_settings_context()


def server_variant() -> str:
    variant = os.environ.get("GRAPHLEMON_PREFECT_SERVER", "").strip() or "reused"
    if variant not in VARIANTS:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"GRAPHLEMON_PREFECT_SERVER={variant!r}: expected one of "
                              f"{', '.join(VARIANTS)}")  # fmt: skip
    return variant


def start_in_background() -> TemporaryApi:
    return TemporaryApi()
