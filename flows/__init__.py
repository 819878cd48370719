"""Prefect flows composing the tasks: devloop (the org loop), unit_loop (L1, a subflow or a deployment run),
reports, log_retention; stages.py is the `Stages` seam as Prefect runs."""
