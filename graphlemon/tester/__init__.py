"""Tester stage (loop L1, seed 000): `run_tester(...) -> TesterOutput`. See docs/tester.md."""

from .models import TesterAgentOutput, TesterFailure, TesterMode, TesterOutput, TesterResult
from .stage import run_tester

__all__ = ["TesterAgentOutput", "TesterFailure", "TesterMode", "TesterOutput", "TesterResult", "run_tester"]
