"""cargo test / libtest output → cases, failures and counts; compile errors → one failure.

libtest prints `test NAME ... ok|FAILED|ignored` as each test ends, then a
`---- NAME stdout ----` section per failure holding the panic (`thread 'NAME'
panicked at src/lib.rs:20:9:` + message, or the older `panicked at 'msg', file:line:col`). A doc
test (`src/lib.rs - hamming (line 52)`) fails at its example's line: the panic's line is one of the
test rustdoc generated around the example, not a line of the file.
"""

from __future__ import annotations

import re

from ..result_models import ParsedRun, TestCase, TestFailure
from ..rust_source import OWN_DOC_TEST, doc_test
from .common import UNNAMED, make_failure

_BINARY = re.compile(r"^\s+(?:Running (?:unittests )?|Doc-tests )(?P<source>\S+)", re.M)
_TEST = re.compile(r"^test (?P<name>.+?)(?P<panic> - should panic)? \.\.\. (?P<status>ok|FAILED|ignored\b.*)$", re.M)
_SECTION = re.compile(r"^---- (?P<name>.+?) stdout ----$", re.M)
_PANIC_NEW = re.compile(
    r"panicked at (?P<file>[^\s:]+):(?P<line>\d+):\d+:\n(?P<message>(?:(?!note: |stack backtrace:|thread '.*' "
    r"(?:\(\d+\) )?panicked at ).*\n)*)"
)
_PANIC_OLD = re.compile(r"panicked at '(?P<message>.*?)', (?P<file>[^\s:]+):(?P<line>\d+):\d+", re.S)
_SECTION_END = re.compile(r"^(?:---- .+ stdout ----|failures:|test result:)", re.M)
_COMPILE = re.compile(r"^error(?:\[(?P<code>E\d+)\])?: (?P<message>.+)$", re.M)
_ARROW = re.compile(r"^\s*--> (?P<file>[^\s:]+):(?P<line>\d+):\d+", re.M)


def parse_cargo_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    binaries = [(m.start(), m["source"]) for m in _BINARY.finditer(output)]
    sections = _sections(output)
    for match in _TEST.finditer(output):
        name = match["name"].strip() or UNNAMED
        source = next((src for start, src in reversed(binaries) if start < match.start()), None)
        status = "passed" if match["status"] == "ok" else "failed" if match["status"] == "FAILED" else "skipped"
        file = source if source and source.endswith(".rs") else None
        run.cases.append(TestCase(name=name, file=file, status=status, selector=name))  # type: ignore[arg-type]
        if status == "failed":
            run.failures.append(_failure(name, sections.get(name, ""), file))
    return run


def _sections(output: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for match in _SECTION.finditer(output):
        rest = output[match.end() :]
        end = _SECTION_END.search(rest)
        found.setdefault(match["name"], rest[: end.start()] if end else rest[:8000])
    return found


_THREAD = re.compile(r"thread '(?P<thread>[^']*)'")


def _ending_panic(name: str, body: str) -> re.Match[str] | None:
    """The panic that ended the test: the last one of the test's own thread (a panic it caught with
    `catch_unwind`, or one of a thread it spawned, comes before it), else the last one."""
    panics = list(_PANIC_NEW.finditer(body)) or list(_PANIC_OLD.finditer(body))
    own = [m for m in panics if _thread_of(body, m.start()) == name]
    return (own or panics or [None])[-1]


def _thread_of(body: str, at: int) -> str | None:
    """The thread libtest names on the panic's line (`thread 'tests::x' (3572) panicked at …`)."""
    said = _THREAD.search(body[:at].rsplit("\n", 1)[-1])
    return said["thread"] if said else None


def _failure(name: str, body: str, file: str | None) -> TestFailure:
    panic = _ending_panic(name, body)
    doc = doc_test(name)
    if not panic:
        return make_failure(name, file=doc.file if doc else file, line=doc.line if doc else None,
                            message=body.strip()[:600] or "failed", detail=body)  # fmt: skip
    message = panic["message"].strip() or "panicked"
    if doc is not None:  # the panic's line is one of the test rustdoc generated: the example starts at doc.line
        return make_failure(name, file=doc.file, line=doc.line, message=message, detail=body)
    own_doc = OWN_DOC_TEST.match(name)  # a crate's or module's own doc (`//!`) comes before any code of its file:
    if own_doc and int(panic["line"]) < int(own_doc["line"]):  # a panic above the example is in the generated test
        return make_failure(name, file=own_doc["file"], line=int(own_doc["line"]), message=message, detail=body)
    return make_failure(name, file=panic["file"], line=int(panic["line"]), message=message, detail=body)


def compile_failure(output: str) -> TestFailure | None:
    """`error[E0308]: mismatched types --> src/lib.rs:3:5` → a failure at that place."""
    error = next(
        (m for m in _COMPILE.finditer(output) if not m["message"].startswith(("could not compile", "test failed"))),
        None,
    )
    if error is None:
        return None
    arrow = _ARROW.search(output, error.end())
    code = f"[{error['code']}]" if error["code"] else ""
    block = output[error.start() : error.start() + 2000]
    return make_failure(
        "cargo: build failed", file=arrow["file"] if arrow else None, line=int(arrow["line"]) if arrow else None,
        message=f"error{code}: {error['message']}", detail=block,
    )  # fmt: skip
