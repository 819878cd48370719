"""GraphLemon: an autonomous, auditable development loop on a real git repository.

The `graphlemon` package is the pure domain, which never imports Prefect, and the
Prefect tasks and flows around it (`graphlemon.tasks`, `graphlemon.flows`: the repository's
`tasks/` and `flows/` folders).
"""

__version__ = "0.1.0"
