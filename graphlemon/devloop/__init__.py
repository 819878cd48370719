"""The DevLoop stages and the org loop (pure domain; flows/ wraps them in Prefect)."""
