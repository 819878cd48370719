"""Issue 47: `graphlemon demo` runs the snake demo from an installed wheel (the example ships in the package), in a
fresh virtualenv that has no source checkout on its path. The wheel's dependencies come from this interpreter's site
(appended after the fresh venv's own, so the wheel's graphlemon is the one imported); `scripts/check_wheel.sh` does
the same with every dependency installed from the registries (no shortcut)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # builds a wheel and runs the demo in a fresh venv

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_graphlemon_demo_runs_from_an_installed_wheel(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                    str(ROOT)], check=True, cwd=tmp_path)  # fmt: skip
    (wheel,) = dist.glob("graphlemon-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"graphlemon/examples/snake/playbook.yaml", "graphlemon/examples/snake/repo/snake/__init__.py",
            "graphlemon/examples/snake/files/plan/sdd.md", "graphlemon/console/static/app.js"} <= names  # fmt: skip
    assert not any(n.startswith("graphlemon/examples/selfdev") for n in names)
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # the wheel with its [demo] extra (pytest and what pytest needs: the example's tests run with the venv's own
    # interpreter, inside the sandbox, which sees only that venv); graphlemon's other dependencies: appended below
    demo_extra = ["pytest", "iniconfig", "pluggy", "packaging", "pygments"]
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "-c",
                    str(ROOT / "constraints.txt"), str(wheel), *demo_extra], check=True, cwd=tmp_path)  # fmt: skip
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    (site / "zz_graphlemon_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run([str(python), "-c", "import graphlemon; print(graphlemon.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert where.startswith(str(site)), where  # the installed wheel, not the checkout
    demo = subprocess.run([str(venv / "bin" / "graphlemon"), "demo", "--engine", "direct"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "SCRIPTED EXECUTOR" in demo.stdout and "demo finished" in demo.stdout
    assert ": done — Implement a snake game" in demo.stdout
    assert f"{venv}/bin/graphlemon status --project" in demo.stdout  # a command that works as printed
