"""BugTriager (seed 001): evidence checks, the deterministic triager, the agent path, self-check."""
