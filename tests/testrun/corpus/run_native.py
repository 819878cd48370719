"""How a held-out split's native/ outputs are made: run_native.py SPLIT SUITE_ID green|bug [TAIL] runs the suite's
native_cmd in a temp copy (plants applied for bug) and writes SPLIT/native/ID.MODE.txt. Not part of the benchmark;
each split's own heldoutN/run_native.py calls it with its split."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[3]
corpus = root / "tests/testrun/corpus"
split, suite_id, mode = sys.argv[1:4]
d = json.load(open(corpus / f"{split}.json"))
s = next(x for x in d["suites"] if x["id"] == suite_id)
tmp = tempfile.mkdtemp(prefix=f"{split}-")
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
out_dir = corpus / split / "native"
open(out_dir / f"{s['id']}.{mode}.txt", "w").write(out)
print(out[-int(sys.argv[4]) if len(sys.argv) > 4 else -6000 :])
shutil.rmtree(tmp, ignore_errors=True)
