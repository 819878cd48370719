"""journalred: run named functions of cases_b with a console of their own: run_more.py PORT FUNC..."""
import sys
from jr import *
import cases_b
console_start(f"{SCR}/p0", int(sys.argv[1])); log("console", CONSOLE["url"])
try:
    for c in sys.argv[2:]:
        log("=== start", c)
        try: getattr(cases_b, c)()
        except Exception:
            import traceback; cases_b.record(c, "runner", "inconclusive", error=traceback.format_exc()[-1500:])
        log("=== end", c)
finally:
    killg(CONSOLE["proc"])
