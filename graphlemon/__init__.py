"""GraphLemon: an autonomous, auditable development loop on a real git repository.

The `graphlemon` package is the pure domain: it never imports Prefect. Prefect
tasks and flows (packages `tasks` and `flows`) are thin wrappers around it.
"""

__version__ = "0.1.0"
