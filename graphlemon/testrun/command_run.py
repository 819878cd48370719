"""One command of the project's (a benchmark check, a validator's or integrator's command), run the way a test run
is: confined (testrun/confine.py: the same sandbox, the same `settings.sandbox`, the same refusal when confinement
is `required` and cannot be had), its own process group, a timeout, its output in a scratch folder read back
through the safe reader (`beneath`). No command of the project's runs with GraphLemon's own rights."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import beneath
from ..errors import GraphLemonError
from ..scratch import scratch_dir
from .confine import Confined, Confinement, judge_outcome, wrap
from .environment import run_env
from .output_text import strip_ansi
from .process import run_process

OUTPUT_LOG = "output.log"
MAX_OUTPUT_BYTES = 4 * 1024 * 1024  # the head and tail of a longer output


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    output: str
    timed_out: bool = False
    start_error: str | None = None
    confinement: Confined = "none"
    refused_reads: list[str] = field(default_factory=list)  # files of the run the host would not follow

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.start_error is None and not self.refused_reads


def run_command(argv: list[str], workdir: Path, *, confinement: Confinement, timeout: float) -> CommandResult:
    """Run `argv` (no shell) in `workdir` under `confinement` (a `required` one that cannot be had is refused)."""
    with scratch_dir() as tmp:
        scratch = Path(tmp)
        wrapped, how = wrap(argv, confinement, cwd=workdir, writable=[scratch])
        outcome = run_process(wrapped, cwd=workdir, env=run_env({}, confinement, how), output_path=scratch / OUTPUT_LOG,
                              timeout=timeout)  # fmt: skip
        refused: list[str] = []
        try:
            data = beneath.read_head_tail(scratch, OUTPUT_LOG, max_bytes=MAX_OUTPUT_BYTES, cut=b"\n[... cut ...]\n")
        except GraphLemonError as exc:
            if beneath.is_refusal(exc):
                refused.append(exc.message)
            data = b""
        except OSError:
            data = b""
    outcome, output = judge_outcome(outcome, strip_ansi(data.decode("utf-8", errors="replace")), how)
    return CommandResult(outcome.exit_code, output, outcome.timed_out, outcome.start_error, how, refused)
