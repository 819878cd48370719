"""Prefect Blocks: credentials, executor settings, budget guardrail, log retention."""
