"""Prefect flows composing the tasks: devloop, unit_loop, integration_loop, reports, log_retention."""
