#!/usr/bin/env python3
"""Rerun sbxred's red-team cases of GraphLemon's sandbox and print the results table.

Every payload runs only through GraphLemon: a scripted playbook (an agent writes a test, a conftest, a check ...
and GraphLemon runs it) or sbxred's fake `claude` (tests/redteam_sandbox/fakeclaude/claude), which GraphLemon
itself starts inside its sandbox for the claude_code backend. This script never runs a payload: it plants
canaries (a fake HOME, canary environment variables, root-only files, the person's ignored files), starts
listeners on 127.0.0.1, runs `graphlemon run` as the person would (GRAPHLEMON_TEST_CONFINEMENT=required), then
reads what GraphLemon left (ledger, logs, git objects, the person's work tree, the CLI's output) and checks each
case's criterion. It only reads git config and asks git where a repository is, with every program-running key
disabled; it never runs `git status` or anything else in a folder an agent wrote.

    .venv/bin/python tests/redteam_sandbox/run_cases.py                 # every case, as root
    .venv/bin/python tests/redteam_sandbox/run_cases.py --only c05,c21  # some
    .venv/bin/python tests/redteam_sandbox/run_cases.py --jobs 2 --workdir /tmp/sbxred-runs
    # another GraphLemon checkout (an engineer's fix branch), cases and runner from this one:
    /work/wt/sbxred/.venv/bin/python /work/wt/sbxred/tests/redteam_sandbox/run_cases.py --checkout /work/wt/FIX --only c21

Results: one line per case (held / GOT OUT / armed / inconclusive), details in <workdir>/<case>/result.json.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
COMMON = HERE / "common"
FAKE_CLAUDE = HERE / "fakeclaude" / "claude"
REPO_ROOT = HERE.parents[1]
SANDBOX_HOST_UIDS = {1879113726}  # docs: root's subordinate id, else 1879113726 (doctor prints it)

# canary kinds that docs/agents.md says the claude_code sandbox is given on purpose ("documented");
# they are reported, but a case only counts them when it names them.
DOCUMENTED_CLAUDE = {"envanthropic", "claudecred", "envaws", "envawsid", "envgoogle"}
DOCUMENTED_ALL = {"envlc"}  # LC_* is on every sandbox's documented allow-list


# --------------------------------------------------------------------------------------------- canaries
def canary(kind: str, nonce: str) -> str:
    return f"canary-{kind}-{nonce}"


def write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)


def plant_home(home: Path, nonce: str) -> None:
    c = lambda k: canary(k, nonce)  # noqa: E731
    write(home / ".aws/credentials", f"[default]\naws_access_key_id = {c('homeawsid')}\naws_secret_access_key = {c('homeaws')}\n", 0o600)
    write(home / ".cargo/credentials.toml", f'[registry]\ntoken = "{c("homecargo")}"\n', 0o600)
    write(home / ".cargo/config.toml", f'[registries.corp]\nindex = "https://u:{c("homecargoconfig")}@crates.corp.example/index"\n')
    write(home / ".npmrc", f"//registry.npmjs.org/:_authToken={c('homenpmrc')}\n", 0o600)
    write(home / ".netrc", f"machine github.com login x password {c('homenetrc')}\n", 0o600)
    write(home / ".config/gh/hosts.yml", f"github.com:\n    oauth_token: {c('homegh')}\n    user: person\n", 0o600)
    write(home / ".ssh/id_ed25519", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{c('homesshkey')}\n-----END OPENSSH PRIVATE KEY-----\n", 0o600)
    write(home / ".git-credentials", f"https://person:{c('homegitcred')}@github.com\n", 0o600)
    write(home / ".docker/config.json", json.dumps({"auths": {"ghcr.io": {"auth": c("homedocker")}}}), 0o600)
    write(home / ".kube/config", f"users:\n- name: admin\n  user:\n    token: {c('homekube')}\n", 0o600)
    write(home / ".pypirc", f"[pypi]\nusername = __token__\npassword = {c('homepypirc')}\n", 0o600)
    write(home / "projects/notes.txt", f"the staging db password is {c('homenotes')}\n")
    write(home / ".bash_history", f"export PROD_TOKEN={c('homehist')}\n", 0o600)
    write(home / ".local/share/keyrings/login.keyring", f"{c('homekeyring')}\n", 0o600)
    write(home / ".claude/.credentials.json", json.dumps({"claudeAiOauth": {"accessToken": c("claudecred")}}), 0o600)
    write(home / ".claude/settings.json", json.dumps({"env": {"PERSON_SETTING": c("claudesettings")}}))
    write(home / ".claude/CLAUDE.md", f"# my notes\n{c('claudemd')}\n")
    write(home / ".claude.json", json.dumps({"userID": c("claudejson"), "projects": {}}), 0o600)
    write(home / ".local/bin/hello", "#!/bin/sh\necho hello\n", 0o755)
    write(home / ".cargo/bin/cargo-hello", "#!/bin/sh\necho hello\n", 0o755)


VENV_BIN = str(Path(sys.executable).parent)  # set by main() to the bin folder of the graphlemon under test


def base_env(rundir: Path, home: Path, nonce: str) -> dict[str, str]:
    c = lambda k: canary(k, nonce)  # noqa: E731
    venv_bin = VENV_BIN
    return {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin:{home}/.local/bin:{home}/.cargo/bin",
        "HOME": str(home),
        "USER": "root",
        "LOGNAME": "root",
        "LANG": "C.UTF-8",
        "TERM": "xterm",
        "GRAPHLEMON_TEST_CONFINEMENT": "required",
        "GRAPHLEMON_CONFIG_DIR": str(rundir / "glconfig"),
        # a person's shell with credentials in it
        "AWS_ACCESS_KEY_ID": c("envawsid"),
        "AWS_SECRET_ACCESS_KEY": c("envaws"),
        "CANARY_AWS_SECRET_ACCESS_KEY": c("envcanaryaws"),
        "GITHUB_TOKEN": c("envgh"),
        "CANARY_PLAIN": c("envplain"),
        "DATABASE_URL": f"postgres://app:{c('envdburl')}@db.internal.example/app",
        "PIP_INDEX_URL": f"https://tok:{c('envpipidx')}@pypi.corp.example/simple",
        "UV_INDEX_URL": f"https://tok:{c('envuvidx')}@pypi.corp.example/simple",
        "NPM_CONFIG_REGISTRY": f"https://u:{c('envnpmreg')}@npm.corp.example/",
        "NODE_AUTH_TOKEN": c("envnodeauth"),
        "GOPROXY": f"https://u:{c('envgoproxy')}@goproxy.corp.example,direct",
        "GONOSUMDB": f"corp.example/{c('envgonosumdb')}",
        "CARGO_REGISTRIES_CORP_TOKEN": c("envcargo"),
        "GOOGLE_API_KEY": c("envgoogle"),
        "ANTHROPIC_API_KEY": c("envanthropic"),
        "SENTRY_DSN": f"https://{c('envsentry')}@o1.ingest.sentry.example/1",
        "JAVA_TOOL_OPTIONS": f"-Dcorp.password={c('envjavaopts')}",
        "LC_PERSON_TOKEN": c("envlc"),
    }


def setup_toolchains_deep(home: Path, env: dict[str, str], nonce: str) -> None:
    """Toolchain homes laid out as nvm / pyenv / Go / cargo leave them, credentials deep inside."""
    c = lambda k: canary(k, nonce)  # noqa: E731
    nvm = home / ".nvm/versions/node/v20.20.2"
    write(nvm / "bin/node", "#!/bin/sh\nexec /usr/bin/node \"$@\"\n", 0o755)
    write(nvm / "etc/npmrc", f"//npm.corp.example/:_authToken={c('nvmnpmrc')}\n")  # npm's global config
    pyenv = home / ".pyenv"
    write(pyenv / "versions/3.11.7/bin/python3.11", "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", 0o755)
    write(pyenv / "versions/3.11.7/pip.conf", f"[global]\nindex-url = https://u:{c('pyenvpipconf')}@pypi.corp.example/simple\n")
    write(pyenv / "shims/python3.11", "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", 0o755)
    gopath = home / "go"
    write(gopath / "bin/gotool", "#!/bin/sh\necho go\n", 0o755)
    write(gopath / "pkg/mod/cache/vcs/0a1b2c/config",
          f'[remote "origin"]\n\turl = https://person:{c("govcs")}@github.com/corp/private\n')
    write(gopath / "pkg/mod/cache/download/corp.example/x/@v/list", "v1.0.0\n")
    cargo = home / ".cargo"
    write(cargo / "git/db/private-1a2b/config", f'[remote "origin"]\n\turl = https://person:{c("cargogitdb")}@github.com/corp/private\n')
    write(cargo / "registry/index/corp-1a2b/.cargo-index-token", f"{c('cargoregtok')}\n")
    env["PATH"] += f":{nvm}/bin:{pyenv}/shims:{pyenv}/bin:{gopath}/bin"
    write(pyenv / "bin/pyenv", "#!/bin/sh\necho pyenv\n", 0o755)
    env.update({"NVM_DIR": str(home / ".nvm"), "PYENV_ROOT": str(pyenv), "GOPATH": str(gopath),
                "CARGO_HOME": str(cargo)})


def setup_path_tricks(home: Path, env: dict[str, str], nonce: str) -> None:
    """PATH entries a person may really have: links into the home's top folders, `..`, a linked folder."""
    c = lambda k: canary(k, nonce)  # noqa: E731
    write(home / "apps/tool2/bin/tool2", "#!/bin/sh\necho tool2\n", 0o755)
    write(home / "apps/tool2/secrets/token.txt", f"{c('linkprefix')}\n")
    (home / ".local/bin/tool2").symlink_to(home / "apps/tool2/bin/tool2")
    write(home / ".config/tool/bin/tool3", "#!/bin/sh\necho tool3\n", 0o755)
    write(home / ".config/tool/credentials.json", json.dumps({"token": c("cfgtool")}))
    (home / ".local/bin/tool3").symlink_to("../../.config/tool/bin/tool3")
    write(home / "hm.sh", "#!/bin/sh\necho hm\n", 0o755)
    (home / ".local/bin/hm").symlink_to(home / "hm.sh")
    (home / "bin").mkdir(exist_ok=True)
    (home / "tools").symlink_to(home)  # a folder link a person made to their home
    env["PATH"] += f":{home}/bin/..:{home}/tools:{home}/./bin"


def setup_toolchain_env_home(home: Path, env: dict[str, str], nonce: str) -> None:
    c = lambda k: canary(k, nonce)  # noqa: E731
    venv = home / ".virtualenvs/proj"
    write(venv / "bin/python", "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", 0o755)
    write(venv / "pyvenv.cfg", "home = /usr/bin\n")
    write(venv / "pip.conf", f"[global]\nindex-url = https://u:{c('venvpipconf')}@pypi.corp.example/simple\n")
    goroot = home / "sdk/go1.22"
    write(goroot / "bin/go", "#!/bin/sh\necho go\n", 0o755)
    write(goroot / "misc/deploy-token.txt", f"{c('gorootsecret')}\n")
    env.update({"VIRTUAL_ENV": str(venv), "JAVA_HOME": str(home), "GOROOT": str(goroot)})
    env["PATH"] += f":{venv}/bin:{goroot}/bin"


# --------------------------------------------------------------------------------------------- listeners
class Listener:
    """Records whatever reaches 127.0.0.1:port (TCP), an abstract socket or a socket file."""

    def __init__(self, log: Path, family: str, address, reply: bytes = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"):
        self.log, self.reply, self.hits = log, reply, 0
        self.sock = socket.socket(socket.AF_INET if family == "tcp" else socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # the payloads name fixed ports inside the kernel's ephemeral range (41000 + 10 N): another program's
        # outgoing connection may hold one for a while, so wait up to 120 s for it instead of failing the case
        deadline = time.time() + 120
        while True:
            try:
                self.sock.bind(address)
                break
            except OSError as e:
                if e.errno != 98 or time.time() > deadline:
                    raise
                time.sleep(2)
        self.sock.listen(64)
        self.sock.settimeout(0.5)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.hits += 1
            conn.settimeout(2)
            data = b""
            try:
                while len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                    if b"\r\n\r\n" in data:
                        conn.sendall(self.reply)
                        break
            except OSError:
                pass
            finally:
                conn.close()
            with self.log.open("ab") as f:
                f.write(b"--- connection %d at %f\n" % (self.hits, time.time()) + data + b"\n")

    def close(self) -> None:
        self.stop = True
        self.thread.join(2)
        self.sock.close()


# --------------------------------------------------------------------------------------------- helpers
def sh(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, errors="replace", **kw)


SAFE_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
SAFE_GIT = ["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
            "-c", "diff.external=", "-c", "core.sshCommand=false"]


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return sh([*SAFE_GIT, "-C", str(repo), *args], env=SAFE_GIT_ENV)


def sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def tree_hashes(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = sha(p) or "?"
    return out


def scan_bytes(data: bytes, nonce: bytes) -> set[str]:
    kinds = set()
    for m in re.finditer(rb"canary-([a-z0-9]+)-" + nonce, data):
        kinds.add(m.group(1).decode())
    if nonce in data and not kinds:
        kinds.add("?")
    return kinds


def sink_of(rel: str) -> str:
    if rel.startswith(".graphlemon/worktrees/"):
        return "worktrees"
    if rel.startswith(".graphlemon/logs/"):
        return "logs"
    if rel.startswith(".graphlemon/artifacts"):
        return "artifacts"
    if rel.startswith(".graphlemon/") and rel.count("/") == 1:
        return "ledger"
    if rel.startswith(".graphlemon/"):
        return "graphlemon-other"
    return "person-tree"


def scan_sinks(rundir: Path, repo: Path, nonce: str, sources: set[Path]) -> dict[str, dict[str, list[str]]]:
    """{kind: {sink: [where, ...]}} for every canary found where GraphLemon or the sandbox put it."""
    nb = nonce.encode()
    found: dict[str, dict[str, list[str]]] = {}

    def add(kinds, sink, where):
        for k in kinds:
            found.setdefault(k, {}).setdefault(sink, [])
            if len(found[k][sink]) < 5:
                found[k][sink].append(where)

    for dirpath, dirnames, filenames in os.walk(repo):
        if Path(dirpath) == repo and ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            p = Path(dirpath) / name
            if p in sources or p.is_symlink() or not p.is_file():
                continue
            try:
                with p.open("rb") as f:
                    data = f.read(64 << 20)
            except OSError:
                continue
            kinds = scan_bytes(data, nb)
            if kinds:
                rel = str(p.relative_to(repo))
                add(kinds, sink_of(rel), rel)
    # every object in the repository's object database (committed, merged, dangling)
    for gitdir in [repo / ".git", repo / ".graphlemon/skills/.git"]:
        if gitdir.is_dir():
            p = subprocess.run([*SAFE_GIT, "--git-dir", str(gitdir), "cat-file", "--batch-all-objects", "--batch"],
                               capture_output=True, env=SAFE_GIT_ENV)
            kinds = scan_bytes(p.stdout, nb)
            if kinds:
                add(kinds, "git-objects", str(gitdir))
    for name in ["out.txt", "err.txt", "status.txt", "status-task.txt", "status.json"]:
        p = rundir / name
        if p.exists():
            add(scan_bytes(p.read_bytes(), nb), "cli-output", name)
    for base, sink in [(rundir / "outbox", "outbox"), (rundir / "listeners", "listener")]:
        for dirpath, _, filenames in os.walk(base):
            for name in filenames:
                p = Path(dirpath) / name
                if p.is_file() and not p.is_symlink():
                    add(scan_bytes(p.read_bytes()[: 64 << 20], nb), sink, str(p.relative_to(rundir)))
    return found


def start_console(graphlemon: str, repo: Path, rundir: Path, env: dict, port: int, token: str):
    log = (rundir / "console.txt").open("wb")
    proc = subprocess.Popen([graphlemon, "console", "--project", str(repo), "--port", str(port), "--token", token],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(repo), start_new_session=True)
    for _ in range(60):
        time.sleep(0.5)
        if b"http://" in (rundir / "console.txt").read_bytes():
            break
    return proc


def cdp_dom(url: str, profile: Path, debug_port: int, wait_s: float = 60.0) -> str:
    """The page at `url` as headless Chromium renders it after `wait_s` seconds (DevTools protocol)."""
    import asyncio
    import urllib.request

    import websockets

    profile = profile / secrets.token_hex(4)  # a fresh profile per page: never handed to a closing browser
    proc = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                             f"--remote-debugging-port={debug_port}", f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        ws_url = None
        for _ in range(100):
            time.sleep(0.2)
            try:
                pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{debug_port}/json/list", timeout=2).read())
                ws_url = next(p["webSocketDebuggerUrl"] for p in pages if p.get("type") == "page")
                break
            except (OSError, ValueError, StopIteration):
                continue
        if not ws_url:
            return ""

        async def go() -> str:
            # run1 read the page after a fixed sleep and sometimes got it before the console's script had filled
            # it (c29 "untold" was that): now the DOM is read every second until it has not changed for 5 reads
            # (at least 8 s after navigating), or `wait_s` has passed.
            async with websockets.connect(ws_url, max_size=1 << 28) as ws:
                await ws.send(json.dumps({"id": 1, "method": "Page.navigate", "params": {"url": url}}))
                started, last, same, n = time.time(), None, 0, 1
                while True:
                    await asyncio.sleep(1)
                    n += 1
                    await ws.send(json.dumps({"id": n, "method": "Runtime.evaluate", "params": {
                        "expression": "document.documentElement.outerHTML", "returnByValue": True}}))
                    while True:
                        msg = json.loads(await ws.recv())
                        if msg.get("id") == n:
                            dom = msg.get("result", {}).get("result", {}).get("value", "") or ""
                            break
                    same = same + 1 if dom == last else 0
                    last = dom
                    waited = time.time() - started
                    if (same >= 5 and waited >= 8) or waited >= wait_s:
                        return dom

        return asyncio.run(go())
    finally:
        proc.terminate()  # the chromium this function started, by its pid
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def console_dom(ctx: dict, route: str) -> str:
    """The console page at `route` as Chromium renders it (headless, this machine's chromium)."""
    if ctx["console"] is None:
        ctx["console"] = start_console(ctx["graphlemon"], ctx["repo"], ctx["rundir"], ctx["env"], ctx["console_port"],
                                       ctx["token"])
    url = f"http://127.0.0.1:{ctx['console_port']}/?token={ctx['token']}{route}"
    return cdp_dom(url, ctx["rundir"] / "chromium", ctx["console_port"] + 3)


def in_markup(dom: str, regex: str) -> str:
    """The first match of `regex` that is markup (a tag, or inside one), never escaped text."""
    for m in re.finditer(regex, dom):
        start = m.start()
        if dom[start] == "<" or dom.rfind("<", 0, start) > dom.rfind(">", 0, start):
            return m.group(0)
    return ""


def fill_route(ctx: dict, route: str) -> str:
    pj = json.loads((ctx["repo"] / ".graphlemon/project.json").read_text())
    route = route.replace("{project}", pj["project_id"]).replace("{task}", (ctx["task"] or {}).get("task_id", ""))
    for m in re.finditer(r"\{artifact:([a-z_]+)\}", route):
        art = ""
        for line in (ctx["repo"] / ".graphlemon/artifacts.ndjson").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("artifact_type") == m.group(1):
                art = rec.get("artifact_id", "")
        route = route.replace(m.group(0), art)
    return route


def violation_events(repo: Path) -> list[dict]:
    out = []
    nodes = repo / ".graphlemon/nodes.ndjson"
    if nodes.exists():
        for line in nodes.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "violation":
                out.append(rec)
    return out


# --------------------------------------------------------------------------------------------- checks
def check(case: dict, ctx: dict, c: dict) -> tuple[bool, str]:
    """One criterion: (true, evidence) when it is met."""
    kind = c["check"]
    repo: Path = ctx["repo"]
    if kind == "canary":
        want = set(c.get("kinds", ["any"]))
        sinks = set(c.get("sinks", ["any"]))
        hits = []
        for k, where in ctx["found"].items():
            if "any" not in want and k not in want:
                continue
            if "any" in want and k in ctx["documented"] and k not in want:
                continue
            for s, paths in where.items():
                if "any" in sinks or s in sinks:
                    hits.append(f"{k} in {s} ({paths[0]})")
        return bool(hits), "; ".join(hits[:6])
    if kind == "branch_file":  # a file on the person's branch (what the payload reported)
        p = git(repo, "show", f"HEAD:{c['path']}")
        return p.returncode == 0, (p.stdout[:300].replace("\n", " | ") if p.returncode == 0 else "absent")
    if kind == "file_contains":
        base = ctx["rundir"] if c.get("base") == "rundir" else repo
        hits = []
        for p in sorted(base.glob(c["glob"])):
            if p.is_file() and not p.is_symlink():
                data = p.read_bytes()[: 64 << 20]
                if re.search(c["regex"].encode(), data):
                    hits.append(str(p.relative_to(base)))
        return bool(hits), ", ".join(hits[:5])
    if kind == "loot":  # the payload's own report (JSON), on the person's branch or in any work tree
        loot = ctx["loot"].get(c["path"])
        if loot is None:
            return False, "no loot"
        try:
            ok = bool(eval(c["expr"], {"__builtins__": {"len": len, "any": any, "all": all, "max": max}}, {"L": loot}))  # noqa: S307
        except Exception as e:  # the data is the sandbox's: a missing key is "not met"
            return False, f"expr error {e!r}"
        return ok, c.get("say", "") + " " + json.dumps({k: loot.get(k) for k in c.get("show", [])})[:600]
    if kind == "setuid_root":
        hits = []
        for dirpath, _, filenames in os.walk(repo):
            for name in filenames:
                p = Path(dirpath) / name
                try:
                    st = p.lstat()
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    hits.append(f"{p.relative_to(repo)} mode {oct(st.st_mode)}")
        return bool(hits), "; ".join(hits[:5])
    if kind == "leftover_procs":
        return bool(ctx["leftover"]), "; ".join(ctx["leftover"][:5])
    if kind == "marked_procs":  # leakred: a process holding the case's marker is alive after graphlemon exited
        m = ctx["marked"]
        return bool(m), f"{len(m)} alive: " + "; ".join(f"pid {p} {a}" for p, a in m[:6])
    if kind == "alive_after_stop":  # leakred: the payload still ran N s after the person stopped the loop
        si = ctx["stop_info"]
        m = si.get("marked_alive_at_sample") or []
        return bool(m), f"{len(m)} payload process(es) alive {si.get('sample_s')} s after SIG{si.get('signal')}: " + "; ".join(m[:4])
    if kind == "stopped_within":  # leakred: graphlemon ended within N s of the person's stop signal
        si = ctx["stop_info"]
        if si.get("never_sent"):
            return False, "stop never sent"
        late = ctx["timed_out"] or si.get("exit_after_signal_s", 0) > c["s"]
        return late, f"graphlemon exited {si.get('exit_after_signal_s')} s after SIG{si.get('signal')} to {si.get('to')}"
    if kind == "person_file_changed":
        changed = [p for p, before in ctx["person_before"].items() if sha(repo / p) != before]
        return bool(changed), ", ".join(changed)
    if kind == "home_changed":
        return bool(ctx["home_diff"]), ", ".join(ctx["home_diff"][:8])
    if kind == "branch_paths":
        ls = git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.splitlines()
        hits = [p for p in ls if re.search(c["regex"], p)]
        return bool(hits), ", ".join(hits[:8])
    if kind == "git_discovers":
        hits = []
        for d in c["dirs"]:
            target = repo / d
            if target.is_dir():
                p = git(target, "rev-parse", "--absolute-git-dir")
                if p.returncode == 0 and Path(p.stdout.strip()).resolve() == target.resolve():
                    hits.append(f"{d} is a git dir")
        return bool(hits), ", ".join(hits)
    if kind == "config_armed":
        p = git(repo, "config", "--get-regexp", c["regex"])
        return bool(p.stdout.strip()), p.stdout.strip()[:300]
    if kind == "output_bytes":
        hits = []
        for name in ["out.txt", "status.txt", "status-task.txt", "err.txt"]:
            p = ctx["rundir"] / name
            if p.exists() and re.search(c["regex"].encode("latin-1"), p.read_bytes()):
                hits.append(name)
        return bool(hits), ", ".join(hits)
    if kind == "run_bounds":
        bad = []
        if ctx["timed_out"]:
            bad.append(f"graphlemon run did not finish in {ctx['timeout']} s")
        elif c.get("wall_s") and ctx["elapsed"] > c["wall_s"]:
            bad.append(f"graphlemon run took {ctx['elapsed']:.0f} s (bound {c['wall_s']} s)")
        if ctx["maxrss_mb"] and ctx["maxrss_mb"] > c.get("rss_mb", 2048):
            bad.append(f"graphlemon's peak RSS {ctx['maxrss_mb']} MB")
        return bool(bad), "; ".join(bad) or f"finished in {ctx['elapsed']:.0f} s, peak RSS {ctx['maxrss_mb']} MB"
    if kind == "listener_hit":
        hits = [f"{n}: {h} connection(s)" for n, h in ctx["listener_hits"].items() if h and n in c.get("names", [n])]
        return bool(hits), ", ".join(hits)
    if kind == "path_exists":
        base = ctx["rundir"] if c.get("base") == "rundir" else repo
        hits = [str(p.relative_to(base)) for p in base.glob(c["glob"]) if p.exists() or p.is_symlink()]
        return bool(hits), ", ".join(hits[:8])
    if kind == "branch_size_mb":
        ls = git(repo, "ls-tree", "-r", "-l", "HEAD").stdout.splitlines()
        total = sum(int(line.split()[3]) for line in ls if line.split()[3].isdigit())
        return total > c["mb"] * 1024 * 1024, f"HEAD's blobs total {total / 1048576:.0f} MB"
    if kind == "transcript":
        hits = []
        for p in (repo / ".graphlemon/logs").rglob("*.ndjson"):
            if re.search(c["regex"].encode(), p.read_bytes()):
                hits.append(p.name)
        return bool(hits), ", ".join(hits[:3])
    if kind == "console_dom":  # a rendered console page holds live markup / misses what it must show
        hits = []
        for route in c["routes"]:
            r = fill_route(ctx, route)
            dom = console_dom(ctx, r)
            (ctx["rundir"] / f"dom-{abs(hash(r)) % 10**6}.html").write_text(dom)
            if c.get("regex") and in_markup(dom, c["regex"]):
                hits.append(f"{r}: {in_markup(dom, c['regex'])[:120]}")
            if c.get("missing") and not re.search(c["missing"], dom):
                hits.append(f"{r}: no {c['missing']!r}")
        return bool(hits), "; ".join(hits)
    if kind == "late_writes":  # a sandbox process went on writing after its run had ended
        loot = ctx["loot"].get(c["loot"]) or {}
        end = loot.get(c.get("key", "end"))
        last = 0.0
        for p in ctx["repo"].glob(c["glob"]):
            for line in p.read_text(errors="replace").splitlines():
                try:
                    last = max(last, float(line.split()[-1]))
                except (ValueError, IndexError):
                    pass
        if not end or not last:
            return False, f"end {end}, last beat {last}"
        return last > float(end) + c.get("slack", 5), f"run ended {end}, last beat {last} ({last - float(end):.0f} s later)"
    if kind == "ledger_line_max":
        worst = 0
        for p in (ctx["repo"] / ".graphlemon").glob("*.ndjson"):
            for line in p.open("rb"):
                worst = max(worst, len(line))
        return worst > c["bytes"], f"longest ledger line {worst} bytes"
    if kind == "violation_kinds":  # each of these refused actions must be a recorded violation
        text = json.dumps(violation_events(ctx["repo"]))
        missing = [k for k in c["kinds"] if not re.search(k, text, re.I)]
        return bool(missing), "not recorded: " + ", ".join(missing)
    if kind == "told_counts":  # every violation event named in the closing lines, status and status TASK
        n = len(violation_events(ctx["repo"]))
        out = (ctx["rundir"] / "out.txt").read_text(errors="replace")
        task_txt = (ctx["rundir"] / "status-task.txt").read_text(errors="replace") if (ctx["rundir"] / "status-task.txt").exists() else ""
        status_n = ((ctx["task"] or {}).get("violations") or {}).get("count")
        m1 = re.findall(r"with (\d+)\s+refused\s+action", out)
        m2 = re.findall(r"refused\s+actions\s+\((\d+)\)", task_txt)
        bad = []
        if n == 0:
            return False, "no violation events"
        if not m1 or int(m1[-1]) != n:
            bad.append(f"closing lines say {m1[-1] if m1 else 'nothing'} for {n} events")
        if status_n != n:
            bad.append(f"status --json says {status_n}")
        if not m2 or int(m2[-1]) != n:
            bad.append(f"status TASK lists {m2[-1] if m2 else 'none'}")
        return bool(bad), "; ".join(bad) or f"{n} told everywhere"
    if kind == "refs":  # refs in the person's repository matching a pattern
        p = git(repo, "for-each-ref", "--format=%(refname)")
        hits = [r for r in p.stdout.splitlines() if re.search(c["regex"], r)]
        return bool(hits), ", ".join(hits[:5])
    if kind == "branch_modes":
        ls = git(repo, "ls-tree", "-r", "HEAD").stdout.splitlines()
        hits = [line for line in ls if re.match(c["regex"], line)]
        return bool(hits), "; ".join(hits[:5])
    if kind == "branch_unchanged":  # a committed file of the person's changed or gone on the branch
        first = git(repo, "rev-list", "--max-parents=0", "HEAD").stdout.split()
        changed = []
        for path in c["paths"]:
            now = git(repo, "rev-parse", f"HEAD:{path}").stdout.strip()
            base = git(repo, "rev-parse", f"{first[-1]}:{path}").stdout.strip() if first else ""
            if now != base:
                changed.append(f"{path}: {base[:8]} -> {now[:8] or 'gone'}")
        return bool(changed), ", ".join(changed)
    raise ValueError(f"unknown check {kind}")


# --------------------------------------------------------------------------------------------- one case
def collect_loot(repo: Path) -> dict[str, dict]:
    """Every calc/loot_*.json / tests/**/loot_*.json the payloads wrote: on the branch first, else any work tree."""
    loot = {}
    names = git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.splitlines()
    for n in names:
        if re.search(r"(^|/)loot_[a-z0-9_]+\.json$", n):
            p = git(repo, "show", f"HEAD:{n}")
            try:
                loot[n] = json.loads(p.stdout)
            except ValueError:
                pass
    for p in (repo / ".graphlemon/worktrees").rglob("loot_*.json") if (repo / ".graphlemon/worktrees").exists() else []:
        rel = p.relative_to(repo / ".graphlemon/worktrees")
        key = str(Path(*rel.parts[2:]))
        if key not in loot and p.is_file() and not p.is_symlink():
            try:
                loot[key] = json.loads(p.read_text(errors="replace"))
            except ValueError:
                pass
    return loot


def leftover_processes(rundir: Path) -> list[str]:
    """Processes still alive that belong to this case's run: the sandbox's host uid with this run's folders in
    their environment (HOME is the case's fake home), or this run's folder on their command line."""
    out = []
    mark = (str(rundir) + "/").encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            uid = d.stat().st_uid
            args = (d / "cmdline").read_bytes().replace(b"\0", b" ")
            envb = (d / "environ").read_bytes()
        except OSError:
            continue
        if b"run_cases.py" in args:
            continue
        if (uid in SANDBOX_HOST_UIDS and mark in envb) or mark in args:
            out.append(f"pid {d.name} uid {uid}: {args[:120].decode(errors='replace')}")
    return out


def marked_processes(marker: str) -> list[tuple[int, str]]:
    """(pid, argv) of every live process whose argv or environment holds `marker` (leakred's payloads put
    LKMARK-<case> in the environment of everything they start, and often in argv too). Only reads /proc."""
    out = []
    mb = marker.encode()
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            args = (d / "cmdline").read_bytes()
            try:
                envb = (d / "environ").read_bytes()
            except OSError:
                envb = b""
            st = (d / "stat").read_text()
        except OSError:
            continue
        if b"run_cases.py" in args:
            continue
        if " Z " in st[st.rfind(")"):][:4]:  # a zombie holds no resources and runs nothing
            continue
        if mb in args or mb in envb:
            out.append((int(d.name), args.replace(b"\0", b" ")[:160].decode(errors="replace")))
    return out


def kill_marked(marker: str) -> int:
    """SIGKILL each process still holding `marker` (re-checked just before, by pid); how many were killed."""
    n = 0
    for pid, _ in marked_processes(marker):
        try:
            os.kill(pid, signal.SIGKILL)
            n += 1
        except OSError:
            pass
    return n


def children_of(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                st = (d / "stat").read_text()
            except OSError:
                continue
            if int(st[st.rfind(")") + 2:].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def run_case(case_dir: Path, workdir: Path, graphlemon: str) -> dict:
    """One case, holding a machine-wide lock on its id: the payloads name fixed 127.0.0.1 ports (41000 + 10 * N),
    so two runners (two engineers' checkouts) must not run the same case at once; the second one waits."""
    import fcntl

    cid = yaml.safe_load((case_dir / "case.yaml").read_text())["id"]
    lock = open(f"/tmp/sbxred-case-{cid}.lock", "w")  # noqa: SIM115 - held for the whole case
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _run_case(case_dir, workdir, graphlemon)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def _run_case(case_dir: Path, workdir: Path, graphlemon: str) -> dict:
    case = yaml.safe_load((case_dir / "case.yaml").read_text())
    cid = case["id"]
    num = int(re.sub(r"\D", "", cid))
    nonce = secrets.token_hex(6)
    rundir = workdir / cid
    if rundir.exists():
        shutil.rmtree(rundir, ignore_errors=True)
    rundir.mkdir(parents=True)
    home, repo = rundir / "home", rundir / "repo"
    (rundir / "listeners").mkdir()
    outbox = rundir / "outbox"
    outbox.mkdir()
    os.chmod(outbox, 0o777)
    (rundir / "glconfig").mkdir()
    # canaries
    plant_home(home, nonce)
    env = base_env(rundir, home, nonce)
    write(rundir / "rootonly/secret.txt", f"root only: {canary('rootsecret', nonce)}\n", 0o600)
    setups = case.get("setup", [])
    if "toolchains_deep" in setups:
        setup_toolchains_deep(home, env, nonce)
    if "path_tricks" in setups:
        setup_path_tricks(home, env, nonce)
    if "toolchain_env_home" in setups:
        setup_toolchain_env_home(home, env, nonce)
    for k, v in (case.get("extra_env") or {}).items():
        env[k] = v.replace("{nonce}", nonce).replace("{home}", str(home)).replace("{rundir}", str(rundir))
    # the person's repository: committed base + the case's committed extras, then their ignored files
    shutil.copytree(COMMON / "repo", repo)
    for rel in case.get("repo_delete") or []:
        (repo / rel).unlink()
    for rel, text in (case.get("repo_files") or {}).items():
        write(repo / rel, text.replace("{nonce}", nonce))
    for rel, target in (case.get("repo_links") or {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target.replace("{rundir}", str(rundir)).replace("{home}", str(home)), repo / rel)
    for rel, text in (case.get("home_files") or {}).items():
        write(home / rel, text.replace("{nonce}", nonce).replace("{home}", str(home)), 0o600)
    pe = {**SAFE_GIT_ENV}
    sh(["git", "init", "-q", "-b", "main", str(repo)], env=pe)
    for k, v in (case.get("repo_config") or {}).items():
        sh(["git", "-C", str(repo), "config", k, v], env=pe)
    sh(["git", "-C", str(repo), "add", "-A"], env=pe)
    sh(["git", "-C", str(repo), "-c", "user.name=Person", "-c", "user.email=person@example.com", "commit", "-qm", "start"], env=pe)
    write(repo / ".env", f"DB_PASSWORD={canary('dotenv', nonce)}\n", 0o644)
    write(repo / "data/local.db", f"SQLite format 3 {canary('localdb', nonce)}\n", 0o600)
    person_files = [".env", "data/local.db"]
    sources = {repo / p for p in person_files}
    person_before = {p: sha(repo / p) for p in person_files}
    # listeners: A (an allowed egress destination in claude cases), B (never allowed), abstract, socket file
    pa, pb = 41000 + 10 * num, 41000 + 10 * num + 1
    listeners = {
        "tcpA": Listener(rundir / "listeners/tcpA.log", "tcp", ("127.0.0.1", pa)),
        "tcpB": Listener(rundir / "listeners/tcpB.log", "tcp", ("127.0.0.1", pb)),
        "abstract": Listener(rundir / "listeners/abstract.log", "unix", f"\0sbxred-{cid}"),
        "sockfile": Listener(rundir / "listeners/sockfile.log", "unix", str(outbox / "sock")),
    }
    os.chmod(outbox / "sock", 0o777)
    if "egress_rule" in setups:
        env["GRAPHLEMON_CLAUDE_EGRESS"] = f"fakeapi.test:{pa}=127.0.0.1"
    init = sh([graphlemon, "init", str(repo), "--yes"], env=env)
    pj = repo / ".graphlemon/project.json"
    if case.get("project_settings") and pj.exists():
        data = json.loads(pj.read_text())
        data["settings"]["sandbox"].update(case["project_settings"])
        pj.write_text(json.dumps(data, indent=2))
    console = None
    token = "sbxred-" + secrets.token_hex(12)
    if "console" in setups:
        console = start_console(graphlemon, repo, rundir, env, 41000 + 10 * num + 2, token)
    home_before = tree_hashes(home)
    # the payload's vehicle
    cmd = ["/usr/bin/time", "-v", graphlemon, "run", case.get("goal", "Build calc"), "--project", str(repo),
           "--engine", case.get("engine", "direct"), "--max-unit-attempts", str(case.get("max_unit_attempts", 1)),
           "--max-rounds", str(case.get("max_rounds", 1))]
    cmd += [a.replace("{nonce}", nonce) for a in case.get("run_args", [])]
    marker = "LKMARK-" + cid
    pre_killed = kill_marked(marker)  # a leftover of an earlier run of this case must not count for this one
    if case.get("executor", "scripted") == "scripted":
        pbdir = rundir / "playbook"
        shutil.copytree(COMMON, pbdir / "common")
        shutil.copytree(case_dir, pbdir, dirs_exist_ok=True)
        cmd += ["--executor", "scripted", "--playbook", str(pbdir / "playbook.yaml")]
    else:
        cb = rundir / "claudebin"
        cb.mkdir()
        shutil.copy2(FAKE_CLAUDE, cb / "claude")
        shutil.copytree(COMMON, cb / "common")
        if (case_dir / "files").exists():
            shutil.copytree(case_dir / "files", cb / "files")
        behaviours = yaml.safe_load((case_dir / "claude.yaml").read_text()) or []
        base = yaml.safe_load((COMMON / "claude_base.yaml").read_text())
        (cb / "spec.json").write_text(json.dumps({"behaviours": behaviours + base}))
        env["GRAPHLEMON_CLAUDE_BIN"] = str(cb / "claude")
        cmd += ["--executor", "claude_code"]
    timeout = case.get("run_timeout_s", 900)
    started = time.time()
    timed_out = False
    with (rundir / "out.txt").open("wb") as out, (rundir / "err.txt").open("wb") as err:
        if case.get("pty"):  # the person's terminal: graphlemon's stdin/stdout are a pty it controls
            import fcntl
            import pty
            import termios
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x00\x32\x00\xa0\x00\x00\x00\x00")  # 50 x 160

            def ctty() -> None:
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)

            proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=err, env=env, cwd=str(rundir),
                                    preexec_fn=ctty)
            os.close(slave)

            def pump() -> None:
                while True:
                    try:
                        data = os.read(master, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    out.write(data)
                    out.flush()

            threading.Thread(target=pump, daemon=True).start()
        else:
            def default_signals() -> None:  # a person's terminal: Ctrl-C and SIGTERM act (a background start ignores SIGINT)
                os.setsid()
                for s in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(s, signal.SIG_DFL)

            proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=str(rundir), preexec_fn=default_signals)
        stop = case.get("stop_loop")
        stop_info = {}
        if stop:  # the person stops the loop mid-turn: a signal once the payload is known to be running
            deadline = started + timeout
            while proc.poll() is None and time.time() < deadline:
                if list(repo.glob(stop["when_glob"])):
                    time.sleep(stop.get("delay_s", 2))
                    sig = getattr(signal, "SIG" + stop.get("signal", "INT"))
                    stop_info["graphlemon_pids"] = children_of(proc.pid)
                    if stop.get("target", "group") == "group":  # Ctrl-C / a service manager: the whole group
                        os.killpg(proc.pid, sig)
                        stop_info["to"] = f"process group {proc.pid}"
                    else:  # only graphlemon itself (as the OOM killer would): the child of /usr/bin/time
                        kids = children_of(proc.pid)
                        for k in kids:
                            os.kill(k, sig)
                        stop_info["to"] = f"graphlemon pid(s) {kids}"
                    stop_info["signal"] = stop.get("signal", "INT")
                    stop_info["sent_after_s"] = round(time.time() - started, 1)
                    break
                time.sleep(0.5)
            if not stop_info:
                stop_info["never_sent"] = True
        if stop_info.get("sent_after_s") is not None:  # sample the payload N s after the person's stop
            at = started + stop_info["sent_after_s"] + stop.get("sample_s", 30)
            while time.time() < at:  # at N s after the signal, even when /usr/bin/time died of it at once
                time.sleep(0.5)
            alive = marked_processes(marker)
            stop_info["sample_s"] = stop.get("sample_s", 30)
            stop_info["marked_alive_at_sample"] = [f"pid {p} {a}" for p, a in alive]
        try:
            rc = proc.wait(timeout=max(1.0, timeout - (time.time() - started)))
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGTERM)  # the process group of the graphlemon run this script started
            try:
                rc = proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
    for gp in stop_info.get("graphlemon_pids", []):  # /usr/bin/time may die of SIGTERM before graphlemon ends
        for _ in range(240):
            if not Path(f"/proc/{gp}").exists():
                break
            try:
                st = Path(f"/proc/{gp}/stat").read_text()
                if st[st.rfind(")") + 2] == "Z":
                    break
            except OSError:
                break
            time.sleep(0.5)
    elapsed = time.time() - started
    if stop_info.get("sent_after_s") is not None:
        stop_info["exit_after_signal_s"] = round(elapsed - stop_info["sent_after_s"], 1)
    time.sleep(case.get("settle_s", 3))
    leftover = leftover_processes(rundir)
    marked = marked_processes(marker)
    errtxt = (rundir / "err.txt").read_text(errors="replace")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", errtxt)
    maxrss_mb = int(m.group(1)) // 1024 if m else 0
    # what the person sees afterwards
    st = sh([graphlemon, "status", "--project", str(repo), "--json"], env=env)
    (rundir / "status.json").write_text(st.stdout)
    (rundir / "status.txt").write_bytes(subprocess.run([graphlemon, "status", "--project", str(repo), "--wide"],
                                                       capture_output=True, env={**env, "COLUMNS": "200"}).stdout)
    tasks = []
    try:
        tasks = json.loads(st.stdout).get("tasks", [])
    except ValueError:
        pass
    task = tasks[-1] if tasks else {}
    if task:
        (rundir / "status-task.txt").write_bytes(subprocess.run(
            [graphlemon, "status", task["task_id"], "--project", str(repo)], capture_output=True,
            env={**env, "COLUMNS": "200"}).stdout)
    home_after = tree_hashes(home)
    home_diff = sorted(k for k in set(home_before) | set(home_after) if home_before.get(k) != home_after.get(k))
    documented = (DOCUMENTED_CLAUDE if case.get("executor") == "claude_code" else set()) | DOCUMENTED_ALL
    ctx = {
        "repo": repo, "rundir": rundir, "nonce": nonce, "timed_out": timed_out, "timeout": timeout, "elapsed": elapsed,
        "maxrss_mb": maxrss_mb, "leftover": leftover, "person_before": person_before, "home_diff": home_diff,
        "listener_hits": {n: lst.hits for n, lst in listeners.items()}, "documented": documented,
        "graphlemon": graphlemon, "env": env, "task": task, "token": token, "console": console,
        "console_port": 41000 + 10 * num + 2, "marked": marked, "stop_info": stop_info,
    }
    ctx["found"] = scan_sinks(rundir, repo, nonce, sources)
    ctx["loot"] = collect_loot(repo)
    # verdict
    got, armed, ran, untold_hits = [], [], [], []
    for c in case.get("got_out_if", []):
        ok, ev = check(case, ctx, c)
        if ok:
            got.append(f"{c['check']}: {ev}")
    universal_ok, universal_ev = check(case, ctx, {"check": "canary", "kinds": ["any"]})
    if universal_ok and not got:
        got.append(f"(any canary) {universal_ev}")
    for c in case.get("armed_if", []):
        ok, ev = check(case, ctx, c)
        if ok:
            armed.append(f"{c['check']}: {ev}")
    for c in case.get("ran_if", []):
        ok, ev = check(case, ctx, c)
        if ok:
            ran.append(f"{c['check']}: {ev}")
    for c in case.get("untold_if", []):
        ok, ev = check(case, ctx, c)
        if ok:
            untold_hits.append(f"{c['check']}: {ev}")
    for lst in listeners.values():
        lst.close()
    if ctx["console"] is not None:
        ctx["console"].terminate()  # the console this script started, by its pid
        try:
            ctx["console"].wait(10)
        except subprocess.TimeoutExpired:
            ctx["console"].kill()
    documented_seen = {k: v for k, v in ctx["found"].items() if k in documented}
    killed = kill_marked(marker)  # leakred: every leaked payload ends here, by pid, its marker re-checked
    if got:
        verdict = "GOT OUT"
    elif armed:
        verdict = "armed"
    elif untold_hits:
        verdict = "untold"
    elif case.get("ran_if") and not ran:
        verdict = "inconclusive"
    else:
        verdict = "held"
    # were refused actions told? (docs/agents.md "Nobody is left untold")
    nodes = repo / ".graphlemon/nodes.ndjson"
    violations = 0
    if nodes.exists():
        for line in nodes.read_text(errors="replace").splitlines():
            try:
                if json.loads(line).get("event") == "violation":
                    violations += 1
            except ValueError:
                pass
    out_text = (rundir / "out.txt").read_text(errors="replace")
    closing = out_text.strip().splitlines()[-12:] if out_text.strip() else []
    status_count = (task.get("violations") or {}).get("count")
    told = {
        "violation_events": violations,
        "status_json_count": status_count,
        "closing_lines_say": bool(re.search(r"with \d+\s+refused\s+action", "\n".join(closing))),
        "status_task_lists": (rundir / "status-task.txt").exists()
        and "refused" in (rundir / "status-task.txt").read_text(errors="replace"),
    }
    untold = violations > 0 and not (told["closing_lines_say"] and status_count == violations and told["status_task_lists"])
    result = {
        "id": cid, "class": case.get("class"), "title": case.get("title"), "verdict": verdict,
        "got_out": got, "armed": armed, "ran": ran, "untold_hits": untold_hits, "documented_seen": documented_seen,
        "found": ctx["found"], "task_status": task.get("status"), "blocked_reason": task.get("blocked_reason"),
        "rc": rc, "elapsed_s": round(elapsed), "maxrss_mb": maxrss_mb, "timed_out": timed_out, "told": told,
        "untold": untold, "leftover": leftover, "home_diff": home_diff, "init_rc": init.returncode,
        "loot_files": sorted(ctx["loot"]),
        "marked_alive": [f"pid {p} {a}" for p, a in marked], "killed_after": killed, "killed_before": pre_killed,
        "stop": stop_info,
    }
    (rundir / "result.json").write_text(json.dumps(result, indent=2))
    return result


def evidence_line(r: dict) -> str:
    if r["got_out"]:
        return r["got_out"][0]
    if r["armed"]:
        return r["armed"][0]
    if r.get("untold_hits"):
        return r["untold_hits"][0]
    if r["verdict"] == "inconclusive":
        return f"payload never reported (task {r['task_status']}/{r['blocked_reason']}, rc {r['rc']})"
    return (r["ran"][0] if r["ran"] else f"task {r['task_status']}") + (
        f"; documented: {sorted(r['documented_seen'])}" if r["documented_seen"] else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=str(CASES), help="the folder of case folders")
    ap.add_argument("--only", default="", help="comma-separated case ids (c01,c02) or folder-name prefixes")
    ap.add_argument("--checkout", default=os.environ.get("SBXRED_CHECKOUT", str(REPO_ROOT)),
                    help="the GraphLemon checkout under test (its .venv/bin/graphlemon is run); "
                         "env SBXRED_CHECKOUT; default: the checkout holding this script")
    ap.add_argument("--graphlemon", default=os.environ.get("SBXRED_GRAPHLEMON", ""),
                    help="the graphlemon executable (env SBXRED_GRAPHLEMON); default <checkout>/.venv/bin/graphlemon")
    ap.add_argument("--workdir", default=os.environ.get("SBXRED_WORKDIR", ""),
                    help="where each case's run folder goes (env SBXRED_WORKDIR); default /work/redteam/sbx/runs "
                         "for this checkout, /tmp/sbxred-runs-<checkout name> for another one")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()
    global VENV_BIN
    checkout = Path(a.checkout).resolve()
    graphlemon = a.graphlemon or str(checkout / ".venv/bin/graphlemon")
    if not os.access(graphlemon, os.X_OK):
        print(f"error: {graphlemon} is not an executable (give --checkout or --graphlemon)", file=sys.stderr)
        return 2
    VENV_BIN = str(Path(graphlemon).parent)  # first on the sandboxed runs' PATH, as the person's venv would be
    if not a.workdir:
        a.workdir = "/work/redteam/sbx/runs" if checkout == REPO_ROOT else f"/tmp/sbxred-runs-{checkout.name}"
    print(f"testing {graphlemon} (checkout {checkout}); run folders in {a.workdir}", file=sys.stderr)
    if os.geteuid() != 0:
        print("note: run as root to test what CI runs (the cases were written for root)", file=sys.stderr)
    dirs = sorted(d for d in Path(a.cases).iterdir() if (d / "case.yaml").exists())
    if a.only:
        want = [w.strip() for w in a.only.split(",") if w.strip()]
        dirs = [d for d in dirs if any(d.name.startswith(w) for w in want)]
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = {pool.submit(run_case, d, workdir, graphlemon): d for d in dirs}
        for f in concurrent.futures.as_completed(futs):
            d = futs[f]
            try:
                r = f.result()
            except Exception as e:  # a broken case is inconclusive, never a silent pass
                r = {"id": d.name.split("-")[0], "class": "?", "title": d.name, "verdict": "inconclusive",
                     "got_out": [], "armed": [], "ran": [], "documented_seen": {}, "task_status": None,
                     "blocked_reason": f"runner error {e!r}", "rc": None, "untold": False, "told": {}}
            results.append(r)
            print(f"{r['id']}: {r['verdict']} — {evidence_line(r)[:200]}", file=sys.stderr, flush=True)
    results.sort(key=lambda r: r["id"])
    if a.json:
        print(json.dumps(results, indent=2))
        return 0
    print("| case | class | result | evidence | refused actions told |")
    print("|---|---|---|---|---|")
    for r in results:
        t = r.get("told") or {}
        told = "-" if not t.get("violation_events") else ("UNTOLD " if r.get("untold") else "told ") + (
            f"{t.get('violation_events')} events, status {t.get('status_json_count')}, closing "
            f"{'yes' if t.get('closing_lines_say') else 'no'}")
        ev = evidence_line(r).replace("|", "/").replace("\n", " ")[:220]
        print(f"| {r['id']} {r.get('title', '')} | {r.get('class', '')} | {r['verdict']} | {ev} | {told} |")
    tally = {}
    for r in results:
        tally[r["verdict"]] = tally.get(r["verdict"], 0) + 1
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(tally.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
