"""Quick retries when Prefect's API answers 503 because its SQLite database was locked.

A Prefect server on SQLite (the temporary server, `prefect server start` without Postgres) creates a task run in a
DEFERRED transaction: it reads, then writes. When another request writes in between, SQLite refuses the upgrade at
once ("database is locked", no busy wait), and the server answers 503 "Service Unavailable" — a retryable error. The
client then sleeps 2^n seconds (±jitter) before it retries. Two unit loops starting their subflows or turns at the
same moment (the DevLoop runs units in parallel) hit this: one waited ~2 s per collision, 2 collisions (~4 s) in one
demo run against a running server; a micro-benchmark of 3 parallel subflows lost 2–4 s per wave (docs/devloop.md,
"What Prefect costs").

`install()` wraps the `send` that Prefect's clients retry with: a 503 is tried again after 20, 50, 100, 200 and
400 ms (0.77 s in all) before Prefect's own back-off takes over unchanged. A 503 that says when to come back
(`Retry-After`: the server's maintenance) is left to Prefect at once. The lock lasts one short write: in the
micro-benchmark a request got through within 1–4 quick retries (≤ 0.4 s).
"""

from __future__ import annotations

from asyncio import sleep as _asleep
from collections.abc import Awaitable, Callable
from time import sleep as _sleep
from typing import Any

QUICK_S = (0.02, 0.05, 0.1, 0.2, 0.4)


def _locked(response: Any) -> bool:
    return response.status_code == 503 and "Retry-After" not in response.headers


def _quick(send: Callable[..., Any]) -> Callable[..., Any]:
    def send_quick(request, *args: Any, **kwargs: Any):
        response = send(request, *args, **kwargs)
        for delay in QUICK_S:
            if not _locked(response):
                break
            response.close()
            _sleep(delay)
            response = send(request, *args, **kwargs)
        return response

    return send_quick


def _aquick(send: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def send_quick(request, *args: Any, **kwargs: Any):
        response = await send(request, *args, **kwargs)
        for delay in QUICK_S:
            if not _locked(response):
                break
            await response.aclose()
            await _asleep(delay)
            response = await send(request, *args, **kwargs)
        return response

    return send_quick


def install() -> None:
    """Idempotent. Wraps `_send_with_retry` of Prefect's sync and async HTTP clients (prefect.client.base)."""
    from prefect.client import base

    for cls, wrap in ((base.PrefectHttpxSyncClient, _quick), (base.PrefectHttpxAsyncClient, _aquick)):
        original = getattr(cls, "_send_with_retry", None)  # private: a Prefect without it keeps its own back-off
        if original is None or getattr(original, "graphlemon_quick_retry", False):
            continue

        def _send_with_retry(self, *args: Any, _original=original, _wrap=wrap, **kwargs: Any):
            if "send" in kwargs:  # Prefect 3.9 passes it by keyword (request=, send=, ...)
                kwargs["send"] = _wrap(kwargs["send"])
            elif len(args) >= 2:
                args = (args[0], _wrap(args[1]), *args[2:])
            return _original(self, *args, **kwargs)

        _send_with_retry.graphlemon_quick_retry = True  # type: ignore[attr-defined]
        cls._send_with_retry = _send_with_retry
