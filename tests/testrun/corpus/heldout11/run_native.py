"""How heldout11/native/ was made: run_native.py SUITE_ID green|bug runs the suite's native_cmd in a temp copy (plants applied for bug)
and writes native/ID.MODE.txt. Not part of the benchmark."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[4]
corpus = root / "tests/testrun/corpus"
d = json.load(open(corpus / "heldout11.json"))
s = next(x for x in d["suites"] if x["id"] == sys.argv[1])
mode = sys.argv[2]
tmp = tempfile.mkdtemp(prefix="hr11-")
proj = pathlib.Path(tmp) / "project"
shutil.copytree(corpus / ".cache" / s["package"], proj, symlinks=True)
if mode == "bug":
    for f, a, b in s["plants"]:
        p = proj / f
        t = p.read_text()
        assert t.count(a) == 1, (f, a, t.count(a))
        p.write_text(t.replace(a, b))
cmd = s["native_cmd"].replace("{python}", str(root / ".venv/bin/python"))
env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", CARGO_NET_OFFLINE="true")
r = subprocess.run(cmd, shell=True, cwd=proj, env=env, capture_output=True, text=True, timeout=300)
out = f"$ {s['native']}\n(exit {r.returncode})\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}"
out = out.replace(str(proj), "<project>").replace(tmp, "<tmp>")
out_dir = pathlib.Path(__file__).resolve().parent / "native"
open(out_dir / f"{s['id']}.{mode}.txt", "w").write(out)
print(out[-int(sys.argv[3]) if len(sys.argv) > 3 else -6000 :])
shutil.rmtree(tmp, ignore_errors=True)
