"""Every shell command the README and docs/*.md show, run (README, "Tests": "Docs that run").

The commands are read with a markdown parser from the fenced code blocks tagged bash / sh / shell / console; an
untagged block whose first word is one of our programs fails here (tag it, so its commands are checked). A line is
read the way the docs write a synopsis: `# comment`, `\\` continuations, `&&` `;` `&` and ` | ` between commands,
`NAME=value` before one, `> file` after one; `[...]` optional (its options are checked too), `a|b` alternatives (all
options of it are checked; of values, the first). Then, by program:

* `graphlemon ...`: the line with `--help`, in this process (the CLI's own entry point): exit 0, and every option
  the line names appears in that help (a renamed or removed option fails). A few read-only commands without a
  placeholder are also run as written, in a fresh project (RUN_AS_WRITTEN).
* `prefect ...`: the same, all lines in one Python process (Prefect's own CLI entry point).
* `make TARGET`: `make -q TARGET` (the target exists; nothing is built).
* `python -c CODE`: every import of CODE is made (the module and each name exist); `python -m M`: M exists.
* `git SUB`: `git SUB -h` prints its usage; `pip`, `cp`: `--help`; `.`, `cd`, `export`: shell builtins, nothing to run.
* Paths in the repository a command names (`examples/...`, `$PWD/examples/...`) exist.

A command that cannot run here is in NOT_RUN with the reason; any other program fails the test until it is given a
check or a reason.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

pytestmark = pytest.mark.system  # make, git, pip, cp and one Prefect CLI process

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
OUR_PROGRAMS = {"graphlemon", "prefect", "make", "python", "python3", "python3.11", "pip"}
BUILTINS = {".", "source", "cd", "export"}
REPO_PATHS = ("examples/", "docs/", "benchmarks/", "scripts/", "prefect.yaml")  # (tests/…: a target's, in examples)
NOT_RUN = {  # program -> why it cannot run here
    "duckdb": "the DuckDB command-line shell is a separate download (PyPI's duckdb is the library GraphLemon uses)",
}
RUN_AS_WRITTEN = (  # read-only, offline, no placeholder: run in a fresh project, exit 0
    "graphlemon status",
    "graphlemon report budget --section by_model",
    'graphlemon sql "SELECT model, sum(cost_usd) FROM usage GROUP BY ALL"',
    "graphlemon agent tools --role tester",
    "graphlemon skills log [ROLE] [--json]",
    "graphlemon logs retention show [--json]",
)


def _blocks():
    parser = MarkdownIt("commonmark")
    for doc in DOCS:
        for token in parser.parse(doc.read_text(encoding="utf-8")):
            if token.type in ("fence", "code_block"):  # an indented block has no tag: it must be fenced and tagged
                language = token.info.split()[0] if token.info.split() else ""  # ```bash title="x": bash
                yield doc.relative_to(ROOT), token.map[0] + 1, language, token.content


def _lines(text: str):
    """Logical lines: `\\` continuations joined, blank and comment-only lines left out."""
    for line in re.sub(r"\\\n", " ", text).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            yield line


def commands(line: str) -> list[list[str]]:
    """The commands of one logical line, each as its words (see the module's docstring)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    words, depth = iter(list(lexer)), 0
    for word in words:
        if word in (";", "&&", "&") or (word == "|" and not depth):
            out.append([])
        elif word in (">", ">>"):
            next(words, None)  # the redirection's file
        elif word == "|" or (not out[-1] and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", word)):
            continue  # `[a | b]`: both are kept; NAME=value before a command
        else:
            depth += word.count("[") - word.count("]")
            out[-1].extend(_choices(word.strip("[]")))
    return [c for c in out if c]


def _choices(word: str) -> list[str]:
    if "|" not in word or not word:
        return [word] if word else []
    parts = word.split("|")
    return [p for p in parts if p] if all(p.startswith("-") for p in parts) else [parts[0]]


def doc_commands() -> list[tuple[str, list[str]]]:
    found = []
    for doc, line, info, text in _blocks():
        if info in SHELL:
            found += [(f"{doc}:{line}", words) for logical in _lines(text) for words in commands(logical)]
    return found


ALL = doc_commands()


def _options(words: list[str]) -> list[str]:
    return sorted({w.split("=")[0] for w in words if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w)})


def _missing_options(words: list[str], help_text: str) -> list[str]:
    return [o for o in _options(words) if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", help_text)]


def test_every_command_block_is_tagged_and_holds_commands():
    untagged = [f"{doc}:{line}" for doc, line, info, text in _blocks()
                if not info and text.split() and text.split()[0] in OUR_PROGRAMS]  # fmt: skip
    assert not untagged, f"untagged code blocks holding commands (tag them bash): {untagged}"
    assert len(ALL) > 60 and {w[0] for _, w in ALL} >= {"graphlemon", "prefect", "make", "python"}


def test_every_program_has_a_check_or_a_reason():
    known = {"graphlemon", "prefect", "make", "git", "pip", "cp"} | {"python", "python3", "python3.11"} | BUILTINS
    unknown = sorted({f"{where}: {words[0]}" for where, words in ALL if _program(words) not in known | set(NOT_RUN)})
    assert not unknown, f"commands no test checks (give them a check here, or a reason in NOT_RUN): {unknown}"


@pytest.mark.parametrize("where, words", [c for c in ALL if c[1][0] == "graphlemon"], ids=lambda v: str(v)[:60])
def test_graphlemon_commands_parse_and_name_options_that_exist(where, words, cli_in_process, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    out = cli_in_process(*words[1:], "--help")
    assert out.returncode == 0, f"{where}: `{shlex.join(words)} --help` failed:\n{out.stdout}{out.stderr}"
    assert not _missing_options(words, out.stdout), f"{where}: {shlex.join(words)}: options not in its --help"


def test_prefect_commands_parse_and_name_options_that_exist():
    lines = [(where, words) for where, words in ALL if words[0] == "prefect"]
    driver = (
        "import contextlib, io, json, sys\nfrom prefect.cli import app\nout = []\n"
        "for args in json.loads(sys.argv[1]):\n"
        "    sys.argv, text = ['prefect', *args, '--help'], io.StringIO()\n"
        "    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):\n"
        "        try:\n            app(); code = 0\n        except SystemExit as exc:\n            code = exc.code\n"
        "    out.append([code, text.getvalue()])\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-c", driver, json.dumps([w[1:] for _, w in lines])], capture_output=True,
                          text=True, env=env, timeout=300, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for (where, words), (code, text) in zip(lines, json.loads(proc.stdout.splitlines()[-1]), strict=True):
        assert code in (0, None), f"{where}: `{shlex.join(words)} --help` exited {code}:\n{text}"
        assert "Usage: prefect" in text and not _missing_options(words, text), f"{where}: {shlex.join(words)}"


@pytest.mark.parametrize("where, words", [c for c in ALL if c[1][0] not in ("graphlemon", "prefect")],
                         ids=lambda v: str(v)[:60])  # fmt: skip
def test_other_commands(where, words):
    program, args = _program(words), words[1:]
    if program in NOT_RUN or program in BUILTINS:
        return
    if program == "make":
        proc = subprocess.run(["make", "-q", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode in (0, 1), f"{where}: make has no target {args}: {proc.stderr}"
    elif program.startswith("python"):
        _python(where, args)
    elif program == "git":
        proc = subprocess.run(["git", _git_subcommand(args), "-h"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 129 and "usage: git" in proc.stdout + proc.stderr, f"{where}: {shlex.join(words)}"
    else:  # pip, cp
        argv = [sys.executable, "-m", "pip", *args[:1]] if program == "pip" else [shutil.which(program) or program]
        proc = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and not _missing_options(words, proc.stdout), f"{where}: {shlex.join(words)}"


def _program(words: list[str]) -> str:
    """The program's name (`.venv/bin/python` is python)."""
    return words[0] if words[0] in BUILTINS else Path(words[0]).name


def _git_subcommand(args: list[str]) -> str:
    words = iter(args)
    for word in words:
        if word in ("-C", "-c"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    raise AssertionError(f"no git subcommand in {args}")


def _python(where: str, args: list[str]) -> None:
    if args[:1] == ["-m"]:
        assert importlib.util.find_spec(args[1]) is not None, f"{where}: no module {args[1]}"
        return
    if args[:1] and args[0].startswith(("benchmarks/", "scripts/")) and args[0].endswith(".py"):
        script = ROOT / args[0]  # a repository script: it exists, and every option the line names is in its --help
        assert script.is_file(), f"{where}: no {args[0]}"
        proc = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert proc.returncode == 0, f"{where}: python {args[0]} --help: {proc.stderr[-500:]}"
        named = [a.split("=", 1)[0] for a in args[1:] if a.startswith("--")]
        assert all(o in proc.stdout for o in named), (
            f"{where}: {args[0]} has no {[o for o in named if o not in proc.stdout]}"
        )
        return
    assert args[:1] == ["-c"], f"{where}: python {args}: give it a check here"
    for node in ast.walk(ast.parse(args[1])):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            assert all(hasattr(module, a.name) for a in node.names), f"{where}: {ast.unparse(node)}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)


def test_repository_paths_the_commands_name_exist():
    named = {(where, w.rpartition("=")[2].removeprefix("$PWD/")) for where, words in ALL for w in words}
    missing = sorted(f"{where}: {path}" for where, path in named if path.startswith(REPO_PATHS)
                     and not (ROOT / path).exists())  # fmt: skip
    assert not missing, missing


@pytest.mark.parametrize("line", RUN_AS_WRITTEN)
def test_read_only_commands_run_as_written_in_a_fresh_project(line, project, cli_in_process, monkeypatch):
    assert any(" ".join(words) == " ".join(commands(line)[0]) for _, words in ALL), f"{line!r} is not in the docs"
    monkeypatch.chdir(project.root)
    words = [w for w in commands(line)[0] if w not in ("ROLE",)]
    out = cli_in_process(*words[1:])
    assert out.returncode == 0, f"{line}: {out.stdout}{out.stderr}"
