"""A tiny calculator library."""
