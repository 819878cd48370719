"""The limits of a confined test run (`settings.sandbox` of a project): its own small module, so the test
runner's start does not import every ledger record (`graphlemon.models` re-exports it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SandboxSettings(BaseModel):
    """What a confined run may use (testrun/confine.py), per process unless said otherwise, and the
    environment variables the project declares for its tests (besides PATH, LANG, TZ and a private HOME)."""

    model_config = ConfigDict(extra="forbid")

    processes: int = Field(default=1024, ge=16)  # tasks at once in one run
    file_size_mb: int = Field(default=2048, ge=1)  # the largest file a run may write
    open_files: int = Field(default=4096, ge=64)
    cpu_seconds: int = Field(default=3600, ge=1)
    memory_mb: int = Field(default=16384, ge=256)  # address space of one process
    tmp_mb: int = Field(default=1024, ge=16)  # the private /tmp and the private home, each
    shm_mb: int = Field(default=256, ge=1)  # the private /dev/shm (shared memory)
    worktree_mb: int = Field(default=2048, ge=16)  # how much one run may add to its writable folders, on disk
    env: list[str] = Field(default_factory=list)  # names passed through to the tests as they are
