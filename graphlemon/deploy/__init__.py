"""The deploy supervisor (REQ-15): blue-green deployment of GraphLemon itself.

`deployments` (the ledger records and their fold), `health_signals` (pure signal evaluation),
`instances` (a commit checked out and served), `haproxy` (the reverse proxy and its runtime API),
`canary` (the scripted snake demo run by a candidate), `supervisor` (the stage / health check /
cutover / monitor / rollback commands). No Prefect here: flows/deploy_supervisor.py wraps these.
"""
