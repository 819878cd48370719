"""`make install` (and every make target's first step): .venv with GraphLemon in it, saying what it does, how far it is
and how long it has taken, instead of one silent pip line.

    python3.11 scripts/install.py [--venv .venv] [--extras demo|dev]

uv (from PyPI, installed into the venv first) installs the packages, several at a time; where uv cannot be had or
fails, pip does it (the same packages, the same constraints). Both see the same indexes: pip's own configuration
(`pip config list`: extra index URLs, find-links) is handed to uv. Each step prints a line when it starts, a line
every few seconds while it runs (elapsed time, what the installer last said, packages so far), and its time when it
ends; the last line is the total. Standard library only: it runs before anything is installed.

Both write the packages' bytecode at install (pip does by default, uv with `--compile-bytecode`): a machine that sets
PYTHONDONTWRITEBYTECODE, and a sandboxed test run that cannot write the venv, would otherwise compile every module
each Python process imports (`import prefect` 1.4 s instead of 0.65 s of CPU).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEARTBEAT_S = 5.0
TEST_ONLY_EXTRA = "test-only"  # pyproject's extra installed beside site-packages with the dev extras (below)
TEST_DEPS = "test-deps"  # that folder, in the venv; tests/conftest.py puts it on sys.path
STARTED = time.monotonic()


def say(text: str) -> None:
    print(f"[install {time.monotonic() - STARTED:5.1f} s] {text}", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=".venv")
    parser.add_argument("--extras", default="dev", help="demo: what `make demo` needs; dev: tests, lint, benchmarks")
    parser.add_argument("--installer", choices=("auto", "pip"), default="auto",
                        help="auto: uv, else pip; pip: pip only (to compare the two)")  # fmt: skip
    args = parser.parse_args(argv)
    venv = (ROOT / args.venv).resolve()
    python = venv / "bin" / "python"
    expected = _constrained_packages()
    if not python.exists():  # without pip: the one pip run below puts pip and uv in it (ensurepip is a second one)
        step("creating the virtualenv " + str(venv), [sys.executable, "-m", "venv", "--without-pip", str(venv)])
        seed = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--progress-bar", "off",
                "pip", *(["uv"] if args.installer == "auto" else [])]  # fmt: skip
        if step("installing pip and uv (a fast installer, from PyPI) into it", seed) != 0:
            step("installing pip into it (ensurepip)", [str(python), "-m", "ensurepip", "--upgrade"])
    target = [f"-e{ROOT}[{args.extras}]"]
    uv = _uv(python) if args.installer == "auto" else None
    if uv is not None:
        cmd = [*uv, "pip", "install", "--python", str(python), "-c", str(ROOT / "constraints.txt"),
               "--config-setting", "editable_mode=compat", "--compile-bytecode", *_pip_sources_for_uv(), *target]  # fmt: skip
        if step(f"installing GraphLemon[{args.extras}] and about {expected} packages with uv", cmd, expected) == 0:
            return _finish(args, venv, python, uv)
        say("uv failed (its output is above); installing with pip instead")
    cmd = [str(python), "-m", "pip", "install", "--progress-bar", "off", "-c", str(ROOT / "constraints.txt"),
           "--config-settings", "editable_mode=compat", *target]  # fmt: skip
    rc = step(f"installing GraphLemon[{args.extras}] and about {expected} packages with pip", cmd, expected)
    return _finish(args, venv, python, None) if rc == 0 else rc


def _finish(args: argparse.Namespace, venv: Path, python: Path, uv: list[str] | None) -> int:
    if args.extras == "dev" and _install_test_only(venv, python, uv) != 0:
        return 1
    say(f"done: {venv} is ready (activate it: . {args.venv}/bin/activate)")
    return 0


def _install_test_only(venv: Path, python: Path, uv: list[str] | None) -> int:
    """pyproject's `test-only` extra (hypothesis) into VENV/test-deps, outside site-packages: GraphLemon's own tests
    import it from there (tests/conftest.py), and it registers no pytest plugin in the interpreter that runs the test
    suites of the projects the tests make (hypothesis's plugin imports all of hypothesis at the end of every pytest
    run: 0.37 s of CPU in each of the ~900 the suite makes)."""
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    packages, target = optional[TEST_ONLY_EXTRA], venv / TEST_DEPS
    if uv is not None:
        base = [*uv, "pip", "install", "--python", str(python), "--compile-bytecode", *_pip_sources_for_uv()]
    else:
        base = [str(python), "-m", "pip", "install", "--progress-bar", "off"]
    cmd = [*base, "-c", str(ROOT / "constraints.txt"), "--target", str(target), *packages]
    return step(f"installing the test-only packages ({', '.join(packages)}) into {target}", cmd)


def _uv(python: Path) -> list[str] | None:
    """uv as a command: the venv's (installed from PyPI with pip when missing), else None (pip installs instead)."""
    uv = python.parent / "uv"
    if not uv.exists():
        cmd = [str(python), "-m", "pip", "install", "--quiet", "--progress-bar", "off", "uv"]
        if step("installing uv (a fast installer, from PyPI) into the virtualenv", cmd) != 0 or not uv.exists():
            say("no uv: pip installs the packages (slower)")
            return None
    return [str(uv)]


@functools.cache  # the package install and the test-only one both hand them to uv
def _pip_sources_for_uv() -> list[str]:
    """The indexes and wheel folders pip is configured with (environment and pip.conf), for uv, which does not read
    pip's configuration; uv may take a package from any of them (the best match wins, as with pip)."""
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                timeout=60).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    out: list[str] = []
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        value = value.strip().strip("'\"")
        name = key.rsplit(".", 1)[-1]
        if name in ("extra-index-url", "find-links", "index-url"):
            for item in value.split():
                out += [{"extra-index-url": "--extra-index-url", "find-links": "--find-links",
                         "index-url": "--extra-index-url"}[name], item]  # fmt: skip
    return [*out, "--index-strategy", "unsafe-best-match"] if out else []


def _constrained_packages() -> int:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if line.strip() and not line.startswith("#"))


PROGRESS = re.compile(r"^\s*(Collecting|Downloading|Downloaded|Resolved|Prepared|Installed|Uninstalled|Building|Built)\b")


def step(what: str, cmd: list[str], expected: int | None = None) -> int:
    """Run one step, printing its progress: a heartbeat every few seconds, the installer's milestone lines, and
    for pip how many packages it has collected so far out of about `expected`."""
    say(f"{what} ...")
    started = time.monotonic()
    state = {"last": "", "collected": 0}
    lines: list[str] = []
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_S):
            far = f"{state['collected']} of about {expected} packages collected; " if state["collected"] else ""
            last = f"; last: {state['last']}" if state["last"] else ""
            say(f"  ... {far}{time.monotonic() - started:.0f} s so far{last}")

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        lines.append(line)
        if line.startswith("Collecting "):
            state["collected"] += 1
        if PROGRESS.match(line):
            state["last"] = line.strip()[:100]
            if not line.lstrip().startswith(("Collecting", "Downloading", "Downloaded")):
                say(f"  {line.strip()[:140]}")
    rc = proc.wait()
    done.set()
    beat.join()
    if rc != 0:
        print("\n".join(lines[-40:]), file=sys.stderr)
        say(f"  failed (exit {rc}) after {time.monotonic() - started:.1f} s")
    else:
        say(f"  done in {time.monotonic() - started:.1f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
