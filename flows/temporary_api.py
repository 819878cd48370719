"""Start Prefect's temporary API server early, so its start-up overlaps the CLI's own.

With no `PREFECT_API_URL` (from any of Prefect's settings sources: environment, profile,
prefect.toml), Prefect starts a temporary server in a subprocess the first time a flow
needs a client, and the flow waits the server's whole start-up (seconds). `graphlemon run`
and `resume` call `start_in_background()` as their first step instead: the server boots
on the other core while the command checks its input and imports the loop, and
`wait()` is called before the flow starts (Prefect then finds the running server).
"""

from __future__ import annotations

import threading

STARTUP_S = 120


class TemporaryApi:
    """The background start of Prefect's temporary server (nothing to do when an API is configured)."""

    def __init__(self) -> None:
        self.imported = threading.Event()  # Prefect is imported: other threads may import it now
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="graphlemon-temporary-api", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            from prefect.settings import get_current_settings

            settings = get_current_settings()
            if settings.api.url or not settings.server.ephemeral.enabled:
                return
            from prefect.server.api.server import SubprocessASGIServer

            self.imported.set()
            # Prefect's 20 s default is too short for a first start (it creates its database) on a busy machine
            SubprocessASGIServer().start(timeout=max(settings.server.ephemeral.startup_timeout_seconds, STARTUP_S))
        except BaseException as exc:  # raised where the flow would have met it: in wait()
            self.error = exc
        finally:
            self.imported.set()

    def wait(self) -> None:
        """Block until the server answers (or its start failed: then raise that error here)."""
        self._thread.join()
        if self.error is not None:
            raise self.error


def start_in_background() -> TemporaryApi:
    return TemporaryApi()
