"""Prefect artifacts with secrets masked: the UI's copy of a record goes through the same redactor as the ledger.

Tasks and flows import `create_markdown_artifact` / `create_table_artifact` / the progress artifacts from here,
never from `prefect.artifacts`, so no caller has to remember to redact (test output, evidence packs, bug titles).
"""

from __future__ import annotations

from typing import Any

from prefect import artifacts as _prefect

from graphlemon.redact import DEFAULT as _REDACTOR

__all__ = [
    "create_markdown_artifact",
    "create_progress_artifact",
    "create_table_artifact",
    "update_progress_artifact",
]


def _clean(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: _REDACTOR.value(v) if k in ("markdown", "table", "description") else v for k, v in kwargs.items()}


def create_markdown_artifact(markdown: str, **kwargs: Any):
    return _prefect.create_markdown_artifact(**_clean({"markdown": markdown, **kwargs}))


def create_table_artifact(table: Any, **kwargs: Any):
    return _prefect.create_table_artifact(**_clean({"table": table, **kwargs}))


def create_progress_artifact(progress: float, **kwargs: Any):
    return _prefect.create_progress_artifact(progress=progress, **_clean(kwargs))


def update_progress_artifact(artifact_id: Any, progress: float, **kwargs: Any):
    return _prefect.update_progress_artifact(artifact_id=artifact_id, progress=progress, **_clean(kwargs))
