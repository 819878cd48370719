"""DuckDB over the ledger: views, convergence, budget, bug history, plots."""
