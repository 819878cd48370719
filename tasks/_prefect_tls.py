"""One verified TLS context for all of this process's Prefect API clients.

Prefect 3.9 builds a new `ssl.SSLContext` from certifi's CA bundle for every API client it creates
(`PrefectClient.__init__` / `SyncPrefectClient.__init__` → `ssl.create_default_context(cafile=...)`): 26 ms on
an idle core here, 60 ms under load. The engine creates a client per subflow (its tracking task run), per
artifact, per events client — about a second of CPU in one demo run. Prefect accepts a ready context in
`httpx_settings["verify"]` (PrefectHQ/prefect#19106), but its own `get_client()` calls pass none.

`install()` gives the client module an `ssl` whose `create_default_context(cafile=F)` returns one context per
CA file, built once: the same verification (CERT_REQUIRED, hostname checked), shared read-only across threads as
connection pools share it. A call without a CA file (Prefect's insecure-skip-verify path, which then changes the
context it gets) still gets a fresh context. A CA file replaced on disk while the process runs is read again by
the next process.
"""

from __future__ import annotations

import ssl
import threading
import types

_contexts: dict[str, ssl.SSLContext] = {}
_lock = threading.Lock()


def _create_default_context(purpose=ssl.Purpose.SERVER_AUTH, *, cafile=None, capath=None, cadata=None):
    if cafile is None or capath is not None or cadata is not None or purpose != ssl.Purpose.SERVER_AUTH:
        return ssl.create_default_context(purpose, cafile=cafile, capath=capath, cadata=cadata)
    with _lock:
        if cafile not in _contexts:
            _contexts[cafile] = ssl.create_default_context(purpose, cafile=cafile)
        return _contexts[cafile]


def install() -> None:
    """Idempotent; only Prefect's client module sees the shared contexts."""
    import prefect.client.orchestration as clients

    if isinstance(clients.ssl, types.ModuleType):
        shim = types.SimpleNamespace(**{k: getattr(ssl, k) for k in dir(ssl) if not k.startswith("__")})
        shim.create_default_context = _create_default_context
        clients.ssl = shim
