"""Prefect @task wrappers, one module per DevLoop stage; each calls one domain function."""

from ._prefect_locked_retry import install as _retry_locked_sqlite_quickly
from ._prefect_tls import install as _share_one_tls_context

_share_one_tls_context()
_retry_locked_sqlite_quickly()
