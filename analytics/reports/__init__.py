"""The three reports, each SQL over the ledger views: convergence, budget, bug history."""
