"""Fakes at the edge of the machine: a Messages API server and a `claude` executable (see each module)."""
