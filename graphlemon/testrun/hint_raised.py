"""Rules over an exception the test did not expect, read from where it was raised and from the test's own code.

- another exception expected: the test's own statement (`self.assertRaises(ValueError, ...)`, a `with
  pytest.raises(ValueError):` around the failing line, read from the test file with Python's parser) names an
  exception, and another one escaped;
- a function used as a value: Python's TypeError names a function or method as an operand's type (a call's
  parentheses left out);
- raised inside a library: the innermost frame of the error's own traceback is a dependency (the standard
  library, site-packages, node_modules) and an outer one is the project's code, not the test file: the
  project's call is where to look.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path, PurePosixPath

from .hint_context import DEPENDENCY_PATH, HintContext, frames, short_path
from .hint_pair import clip as _clip
from .hint_premises import Premise, Rule
from .rust_source import source_lines

# the exception the failure reports: `KeyError: '#1'`, `re.error: bad escape`, `E   ValueError` (not an assertion)
_RAISED = re.compile(
    r"^(?:E\s+)?(?P<type>(?:[A-Za-z_]\w*\.)*(?:(?:[A-Z]\w*)?(?:Error|Exception|Exit)|[a-z_]\w*\.error))"
    r"(?::\s*(?P<msg>.*))?$"
)
_ASSERTIONS = {"AssertionError", "AssertionFailedError", "ComparisonFailure"}
_RAISES_CALLS = {"assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "raises", "failUnlessRaises"}
_CALLABLE_TYPES = {"function", "builtin_function_or_method", "method", "method-wrapper", "builtin_method",
                   "method_descriptor", "wrapper_descriptor"}  # fmt: skip
_OPERAND_TYPES = re.compile(
    r"TypeError: (?:unsupported operand type\(s\) for [^:\n]+: '(?P<a>[\w.-]+)' and '(?P<b>[\w.-]+)'|"
    r"'(?P<c>[\w.-]+)' object is not (?:subscriptable|iterable)|"
    r"can only concatenate str \(not \"(?P<d>[\w.-]+)\"\) to str|"
    r"'(?P<e>[\w.-]+)' object cannot be interpreted as an integer|"
    r"'(?P<f>[\w.-]+)' object has no attribute '[^']+')"
)
_MAX_SOURCE = 1_000_000


def raised(ctx: HintContext) -> tuple[str, str] | None:
    """(type, message) of the exception the failure reports, when it is one and not an assertion's."""
    first = ctx.failure.message.strip().splitlines()[0] if ctx.failure.message.strip() else ""
    match = _RAISED.match(first.strip())
    if match is None or match["type"].rsplit(".", 1)[-1] in _ASSERTIONS:
        return None
    return match["type"], (match["msg"] or "").strip()


RAISED = Premise("an exception raised", "the failure reports an exception (its type and message), not a failed "
                 "assertion", raised)  # fmt: skip


# --- another exception expected ----------------------------------------------------------------------------


def expected_exceptions(ctx: HintContext) -> tuple[tuple[str, ...], str] | None:
    """The exception(s) the test's own code expects around its failing line, and the call that says so."""
    f = ctx.failure
    if ctx.root is None or not f.file or not f.line or not f.file.endswith(".py"):
        return None
    tree = _parsed(ctx.root, f.file)
    if tree is None:
        return None
    found: tuple[tuple[str, ...], str] | None = None
    for node in ast.walk(tree):
        call, body = _raises_call(node)
        if call is None or not call.args:
            continue
        start, end = (body[0].lineno, body[-1].end_lineno) if body else (call.lineno, call.end_lineno)
        if start is None or end is None or not start <= f.line <= end:
            continue
        names = _exception_names(call.args[0])
        if names:
            found = (names, _call_name(call))  # the innermost one wins (ast.walk goes outside in)
    return found


def _raises_call(node: ast.AST) -> tuple[ast.Call | None, list[ast.stmt]]:
    """`self.assertRaises(E, f, x)` (no body), or a `with` item `pytest.raises(E)` / `self.assertRaises(E)`."""
    if isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            if isinstance(item.context_expr, ast.Call) and _call_name(item.context_expr) in _RAISES_CALLS:
                return item.context_expr, node.body
        return None, []
    if isinstance(node, ast.Call) and _call_name(node) in _RAISES_CALLS and len(node.args) >= 2:
        return node, []
    return None, []


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _exception_names(node: ast.expr) -> tuple[str, ...]:
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    names = [n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else "" for n in items]
    return tuple(names) if all(names) else ()


def _parsed(root: Path, file: str) -> ast.Module | None:
    lines = source_lines(root, file)
    if lines is None or sum(map(len, lines)) > _MAX_SOURCE:
        return None
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _another_one(ctx: HintContext) -> tuple[str, str] | None:
    """The raised exception, when it is none of those the test expects (so it escaped the test's check)."""
    error, expected = raised(ctx), expected_exceptions(ctx)
    if error is None or expected is None or error[0].rsplit(".", 1)[-1] in expected[0]:
        return None
    return error


def _another_says(ctx: HintContext, error: tuple[str, str], expected: tuple[tuple[str, ...], str],
                  escaped: tuple[str, str]) -> str:  # fmt: skip
    kind, message = error
    wanted = " or ".join(expected[0])
    said = f" ({_clip(message)})" if message else ""
    return (f"{kind}{said} is raised{ctx.where} where the test expects {wanted} (its `{expected[1]}`): the code "
            f"lets {kind} escape for this input.")  # fmt: skip


# --- a function used as a value ----------------------------------------------------------------------------


def _callable_operand(ctx: HintContext) -> tuple[re.Match[str], str] | None:
    for text in (ctx.failure.message, ctx.evidence):
        match = _OPERAND_TYPES.search(text)
        if match:
            kind = next((t for t in match.groups() if t in _CALLABLE_TYPES), None)
            return (match, kind) if kind else None
    return None


def _function_as_value(ctx: HintContext, found: tuple[re.Match[str], str]) -> str:
    match, kind = found
    line = match.string[match.start() :].splitlines()[0]
    return (f"{_clip(line, 140)}{ctx.where_of(match)}: a function or method ({kind}) is used as a value — its "
            "call's parentheses are left out (`text.lower` for `text.lower()`), or the function is passed where "
            "its result belongs.")  # fmt: skip


# --- raised inside a library -------------------------------------------------------------------------------


def _library_frames(ctx: HintContext) -> tuple[str, str] | None:
    """(the innermost frame, in a dependency; the project's frame that called into it), from the error's own
    traceback, when the innermost frame is a dependency and an outer one is the project's, not the test file."""
    stack = frames(ctx.text)  # innermost first
    if not stack or not DEPENDENCY_PATH.search(stack[0][0]):
        return None
    test_file = (ctx.failure.file or "").lstrip("./")
    for path, line in stack[1:]:
        if DEPENDENCY_PATH.search(path):
            continue
        if test_file and path.endswith(test_file):
            return None  # the test itself called the library
        return f"{stack[0][0]}:{stack[0][1]}", f"{short_path(path, ctx.root)}:{line}"
    return None


def library_name(path: str) -> str:
    """`the standard library (re)`, `package requests`, `package @scope/pkg` — from a frame's path."""
    parts = PurePosixPath(path).parts
    for marker in ("site-packages", "dist-packages", "node_modules"):
        if marker in parts:
            rest = parts[parts.index(marker) + 1 :]
            name = "/".join(rest[:2]) if rest and rest[0].startswith("@") else (rest[0] if rest else "")
            return f"package `{name.removesuffix('.py')}`" if name else "a dependency"
    for i, part in enumerate(parts):
        if re.fullmatch(r"python\d(?:\.\d+)?", part) and i + 1 < len(parts):
            return f"the standard library (`{parts[i + 1].removesuffix('.py')}`)"
        if part == "src" and i > 0 and parts[i - 1].startswith("go"):
            return "Go's standard library"
    return "a dependency"


def _library_says(ctx: HintContext, error: tuple[str, str], where: tuple[str, str]) -> str:
    kind, message = error
    inner, call = where
    said = f": {_clip(message, 120)}" if message else ""
    return (f"{kind}{said} — raised inside {library_name(inner)} ({PurePosixPath(inner).name}), called from the "
            f"project's code at {call}.")  # fmt: skip


FIRST_RULES: tuple[Rule[HintContext], ...] = (
    Rule("another exception expected", (RAISED, Premise("an exception expected", "the test's own code around its "
         "failing line (read with Python's parser) expects an exception: assertRaises, pytest.raises",
         expected_exceptions), Premise("another one escaped", "the raised exception is none of those expected",
         _another_one)), _another_says),
    Rule("function used as a value", (Premise("a callable as an operand", "Python's TypeError names a function or "
         "method as the type of an operand or of what was indexed or iterated", _callable_operand),),
         _function_as_value),
)  # fmt: skip
LAST_RULES: tuple[Rule[HintContext], ...] = (
    Rule("raised inside a library", (RAISED, Premise("raised in a dependency, called by the project", "the innermost "
         "frame of the error's own traceback is a dependency and an outer one the project's code, not the test "
         "file", _library_frames)), _library_says),
)  # fmt: skip
