"""Which argument of a node:assert call the test's own source shows to be the expected one.

node:assert's `actual` and `expected` (in `false == true`, `5 !== 4`, its `+ actual - expected` diff)
name the call's argument positions, not what the code produced and what the test requires: a test may
write `assert.equal(false, isMatch(x))`. The sides are settled only by the source of the assertion
call at the top project frame of its stack (`at assertNotMatch (/p/test.js:11:10)`), parsed with
tree-sitter: one argument a literal (a number, string, boolean, null, or an array/object of them) and
the other not → the literal is expected (a literal is never what the code produced); else one argument
named as an expectation (`expected`, `want`) or as a result (`actual`, `result`) against one that is not.
Otherwise None: the values stay node's actual and expected arguments. node's column counts UTF-16 units
and tree-sitter's bytes: on a line with other characters before the call they may not meet, and then
nothing is settled.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from .assertions import EXPECTED_WORDS, NODE_ARGUMENTS, PRODUCED_WORDS, identifier_words
from .hint_context import DEPENDENCY_PATH, HintContext, short_path
from .result_models import TestFailure
from .rust_source import source_lines

_LITERALS = {"number", "string", "true", "false", "null", "undefined", "regex"}
_JS_FILE = (".js", ".cjs", ".mjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")


@cache
def js_parser(suffix: str) -> Any:
    """A tree-sitter parser for a JavaScript or TypeScript file of this suffix."""
    from tree_sitter import Language, Parser  # heavy: loaded when a source is first parsed

    if suffix in (".ts", ".tsx", ".mts", ".cts"):
        import tree_sitter_typescript as tsts

        lang = tsts.language_tsx() if suffix == ".tsx" else tsts.language_typescript()
    else:
        import tree_sitter_javascript as tsjs

        lang = tsjs.language()
    return Parser(Language(lang))


# a node stack frame: `    at assertNotMatch (/p/test.js:11:10)`, `    at /p/test.js:11:10`, and without the `at `
# in node:test's TAP YAML (`TestContext.<anonymous> (/p/test/a.test.js:64:12)`)
_NODE_FRAME = re.compile(r"^\s*(?:at )?(?:[^\n]*? \()?(?:file://)?(?P<path>[^\s()]+?):(?P<line>\d+):(?P<column>\d+)\)?\s*$", re.M)


def node_expected_argument(ctx: HintContext) -> int | None:
    """Which of node:assert's two arguments (0: actual, 1: expected) the assertion's source shows to be expected."""
    found = [(m["path"], int(m["line"]), int(m["column"])) for m in _NODE_FRAME.finditer(ctx.text)]
    frame = assert_frame(found, ctx.root)
    return expected_argument(ctx.root, *frame) if frame is not None else None


def settle_node_sides(failure: TestFailure, root: Path | None) -> None:
    """node's assert gives argument positions, not sides; when the test's own call shows which argument is the
    expected one (`js_source`), the failure's `expected`/`got` are set from it, so the JSON says what the hint says."""
    ops = failure.operands
    if ops is None or ops.sided or ops.shortened or ops.labels != NODE_ARGUMENTS or None in (ops.first, ops.second):
        return
    at = node_expected_argument(HintContext(failure, root))
    if at is None:
        return
    values = (ops.first, ops.second)
    failure.expected, failure.got = values[at], values[1 - at]
    failure.operands = ops.model_copy(update={"labels": (NODE_ARGUMENTS[at], NODE_ARGUMENTS[1 - at]), "sided": True})


def assert_frame(frames: list[tuple[str, int, int | None]], root: Path | None) -> tuple[str, int, int | None] | None:
    """The top project frame of a node stack (file relative to `root`, line, column), if it is a JS file."""
    for path, line, column in frames:
        if DEPENDENCY_PATH.search(path):
            continue
        relative = short_path(path, root)
        return (relative, line, column) if relative.endswith(_JS_FILE) and not relative.startswith("/") else None
    return None


def expected_argument(root: Path | None, file: str, line: int, column: int | None) -> int | None:
    """Which argument (0, 1) of the assertion call at `file:line[:column]` the source shows to be expected."""
    lines = source_lines(root, file) if root is not None else None
    if lines is None or not 0 < line <= len(lines):
        return None
    source = "\n".join(lines).encode("utf-8")
    tree = js_parser(PurePosixPath(file).suffix).parse(source)
    call = _call_at(tree.root_node, line - 1, None if column is None else column - 1)
    if call is None:
        return None
    args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
    if len(args) < 2:
        return None
    return _settled(args[0], args[1], source)


def _call_at(root: Any, row: int, column: int | None) -> Any:
    """The one call on `row` whose callee holds `column` (node points at the called name), or the only call there."""
    calls = [n for n in _walk(root) if n.type == "call_expression" and n.start_point[0] <= row <= n.end_point[0]]
    calls = [c for c in calls if c.child_by_field_name("function").end_point[0] == row]
    if column is not None:
        calls = [c for c in calls if _holds(c.child_by_field_name("function"), row, column)]
    return calls[0] if len(calls) == 1 and calls[0].child_by_field_name("arguments") is not None else None


def _holds(node: Any, row: int, column: int) -> bool:
    return node.start_point <= (row, column) < node.end_point or node.end_point == (row, column)


def _settled(first: Any, second: Any, source: bytes) -> int | None:
    literal = [_is_literal(n) for n in (first, second)]
    if literal[0] != literal[1]:  # a literal is never what the code produced
        return 0 if literal[0] else 1
    roles = [_role(n, source) for n in (first, second)]
    for i in (0, 1):
        if roles[i] == "expected" and roles[1 - i] != "expected":
            return i
        if roles[i] == "produced" and roles[1 - i] != "produced":
            return 1 - i
    return None


def _is_literal(node: Any) -> bool:
    if node.type in _LITERALS or (node.type == "template_string" and not node.named_children):
        return True
    if node.type == "unary_expression":
        return node.named_children[0].type == "number"
    if node.type == "identifier":
        return False
    if node.type in ("array", "object"):
        return all(_is_literal(c) for c in node.named_children if c.type != "comment")
    if node.type == "pair":
        return _is_literal(node.child_by_field_name("value"))
    return False



def _role(node: Any, source: bytes) -> str | None:
    if node.type not in ("identifier", "member_expression"):
        return None
    name = node if node.type == "identifier" else node.child_by_field_name("property")
    words = set(identifier_words(source[name.start_byte : name.end_byte].decode("utf-8", "replace")))
    if words & EXPECTED_WORDS:
        return "expected"
    if words & PRODUCED_WORDS:
        return "produced"
    return None


def _walk(node: Any) -> list[Any]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(current.children))
    return found
