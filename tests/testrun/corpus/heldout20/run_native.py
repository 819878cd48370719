"""How heldout20/native/ was made: run_native.py SUITE_ID green|bug [TAIL] (the shared ../run_native.py, for this
split). Not part of the benchmark."""

import pathlib
import subprocess
import sys

shared = pathlib.Path(__file__).resolve().parents[1] / "run_native.py"
sys.exit(subprocess.call([sys.executable, str(shared), "heldout20", *sys.argv[1:]]))
