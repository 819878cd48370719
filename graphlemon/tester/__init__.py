"""Tester stage (loop L1, seed 000): `run_tester(...) -> TesterOutput`. See docs/tester.md."""

from .stage import run_tester
from .tester_models import TesterAgentOutput, TesterFailure, TesterMode, TesterOutput, TesterResult

__all__ = ["TesterAgentOutput", "TesterFailure", "TesterMode", "TesterOutput", "TesterResult", "run_tester"]
