"""Prefect @task wrappers, one module per DevLoop stage; each calls one domain function."""
