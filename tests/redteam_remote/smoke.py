"""Bring the stack up, run one remote_pool goal to its end with two workers, print what happened (runner check)."""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from stack import Stack

s = Stack(Path(sys.argv[1]))
try:
    t0 = time.monotonic(); s.up(); print("up", round(time.monotonic() - t0, 1), flush=True)
    s.start_worker("w1"); s.start_worker("w2")
    d = s.start_devloop()
    d.wait(900)
    print("devloop rc", d.returncode, round(time.monotonic() - t0, 1))
    print((s.base / "devloop.log").read_text()[-1500:])
    for r in s.unit_runs():
        print(r.name, r.state.type.value, r.state.name, (r.state.message or "")[:150])
    print(s.status())
finally:
    s.down()
