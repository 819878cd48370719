"""The request headers a unit's code reads, found with a parser (Python's `ast`, tree-sitter for JavaScript /
TypeScript), never by matching text: `request.headers.get("X-Api-Key")`, `request.headers["X-Api-Key"]`,
`req.get("X-Api-Key")`, `req.header("X-Api-Key")`, `req.headers["x-api-key"]`. A read whose name is computed is
not seen."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import PurePosixPath

from .codescan import SourceFile
from .handlers import js_parser, walk_nodes

_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx")
_JS_REQUEST_GETTERS = ("get", "header")  # Express's req.get(name) / req.header(name)
_MAX_BYTES = 1_000_000  # a larger source file is not parsed


@dataclass(frozen=True)
class HeaderRead:
    name: str  # as the code writes it
    rel: str
    line: int


def header_reads(sources: list[SourceFile]) -> list[HeaderRead]:
    out: list[HeaderRead] = []
    for src in sources:
        if len(src.text) > _MAX_BYTES:
            continue
        if src.rel.endswith(".py"):
            out += _python_reads(src)
        elif src.rel.endswith(_JS_SUFFIXES):
            out += _js_reads(src)
    return out


def _python_reads(src: SourceFile) -> list[HeaderRead]:
    try:
        tree = ast.parse(src.text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        target, key = None, None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            target, key = node.func.value, node.args[0]
        elif isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        is_headers = (
            isinstance(target, ast.Attribute)
            and target.attr == "headers"
            and isinstance(target.value, ast.Name)
            and target.value.id in ("request", "req")
        )  # the incoming request's headers, not a client response's
        if is_headers and isinstance(key, ast.Constant) and isinstance(key.value, str):
            out.append(HeaderRead(key.value, src.rel, node.lineno))
    return out


def _js_reads(src: SourceFile) -> list[HeaderRead]:
    source = src.text.encode("utf-8", errors="replace")
    root = js_parser(PurePosixPath(src.rel).suffix).parse(source).root_node
    out = []
    for node in walk_nodes(root):
        name = None
        if node.type == "call_expression":
            fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
            prop = fn.child_by_field_name("property") if fn is not None and fn.type == "member_expression" else None
            obj = fn.child_by_field_name("object") if prop is not None else None
            first = args.named_children[0] if args is not None and args.named_children else None
            if prop is not None and _text(prop, source) in _JS_REQUEST_GETTERS and _is_request(obj, source):
                name = _string(first, source)
            elif prop is not None and _text(prop, source) == "get" and _is_headers(obj, source):
                name = _string(first, source)  # fetch's / undici's headers.get(name) on a request
        elif node.type == "subscript_expression" and _is_headers(node.child_by_field_name("object"), source):
            name = _string(node.child_by_field_name("index"), source)
        if name:
            out.append(HeaderRead(name, src.rel, node.start_point[0] + 1))
    return out


def _is_request(node, source: bytes) -> bool:
    return node is not None and node.type == "identifier" and _text(node, source) in ("req", "request")


def _is_headers(node, source: bytes) -> bool:
    if node is None or node.type != "member_expression":
        return False
    prop = node.child_by_field_name("property")
    return prop is not None and _text(prop, source) == "headers" and _is_request(node.child_by_field_name("object"), source)


def _string(node, source: bytes) -> str | None:
    if node is None or node.type != "string":
        return None
    return _text(node, source)[1:-1] or None


def _text(node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


__all__ = ["HeaderRead", "header_reads"]
