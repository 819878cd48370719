"""Route handlers located with a parser: Python's `ast` (FastAPI, Flask), tree-sitter (Express in JS / TS).

A route is a definition, not a string that looks like one:
- Python: a function decorated by `<router>.<verb>("/path", ...)` / `.route(...)` / `.api_route(...)`;
- JavaScript / TypeScript: a call `<recv>.<verb>("/path", ..., handler)` whose receiver was created by
  `express()` / `Router()` in that file, or whose handler is a function of at least two parameters
  (Express calls it with `req, res`). `cache.get('/k')` or `map.get('/k', fallback)` is a method
  call, not a route.
A handler's body is its function's syntax node (start to end), never "up to the next route".
The statuses it can produce are read from that node: `HTTPException(404)`, `abort(404)`,
`return x, 201`, `status_code=` / `status=` keywords, `status.HTTP_404_...`; `res.status(404)`,
`res.sendStatus(204)`, `res.statusCode = 404`; a plain return / `res.json()` is the framework default.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from ..testrun.js_source import js_parser
from .code_records import CodeRoute, SourceFile
from .sdd import normalize_path

PY_VERBS = {"get", "post", "put", "patch", "delete", "head", "options", "route", "api_route"}
JS_VERBS = {"get", "post", "put", "patch", "delete", "all"}
ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def parsed_routes(sources: list[SourceFile], framework: str) -> list[CodeRoute]:
    if framework in ("fastapi", "flask", "python"):
        return python_routes(sources)
    return js_routes(sources)


# -- Python ----------------------------------------------------------------------------------


def python_routes(sources: list[SourceFile]) -> list[CodeRoute]:
    trees = {}
    for src in sources:
        if src.rel.endswith(".py"):
            try:
                trees[src.rel] = ast.parse(src.text)
            except (SyntaxError, ValueError):
                continue  # a file that does not parse serves no route
    prefixes = _py_prefixes(trees.values())
    routes = []
    for rel, tree in trees.items():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for dec in fn.decorator_list:
                route = _py_route(dec)
                if route is None:
                    continue
                var, methods, path, default = route
                statuses, throws_at = _py_statuses(fn, default)
                full = normalize_path(_join(prefixes.get(var, ""), path))
                routes += [
                    CodeRoute(method=m, path=full, file=rel, line=dec.lineno, statuses=statuses, throws_at=throws_at)
                    for m in methods
                ]
    return routes


def _py_route(dec: ast.expr) -> tuple[str, list[str], str, int] | None:
    if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr in PY_VERBS):
        return None
    path = _py_str(dec.args[0]) if dec.args else _py_str(_kw(dec, "path") or _kw(dec, "rule"))
    if path is None:
        return None
    verb = dec.func.attr
    methods_node = _kw(dec, "methods")
    methods = (
        [m.upper() for e in methods_node.elts if (m := _py_str(e))]
        if isinstance(methods_node, ast.List | ast.Tuple | ast.Set)
        else []
    )
    methods = methods or (["GET"] if verb in ("route", "api_route") else [verb.upper()])
    default = _py_int(_kw(dec, "status_code")) or 200
    return _py_name(dec.func.value), methods, path, default


def _py_statuses(fn: ast.AST, default: int) -> tuple[dict[int, int], int | None]:
    found: dict[int, int] = {}
    throws_at = None
    for node in _own_nodes(fn):
        if isinstance(node, ast.Raise) and node.exc is not None:
            call = node.exc if isinstance(node.exc, ast.Call) else None
            if call is not None and _py_name(call.func) == "HTTPException":
                code = _py_status(call.args[0] if call.args else _kw(call, "status_code"))
                if code:
                    found.setdefault(code, node.lineno)
            elif throws_at is None:
                throws_at = node.lineno
        elif isinstance(node, ast.Call):
            name = _py_name(node.func)
            if name in ("abort", "make_response") and node.args:
                code = _py_status(node.args[0] if name == "abort" else node.args[-1])
                if code:
                    found.setdefault(code, node.lineno)
            for kw in node.keywords:
                if kw.arg in ("status_code", "status", "code"):
                    code = _py_status(kw.value)
                    if code:
                        found.setdefault(code, node.lineno)
        elif isinstance(node, ast.Return):
            value = node.value
            if isinstance(value, ast.Tuple) and len(value.elts) >= 2 and _py_status(value.elts[1]):
                found.setdefault(_py_status(value.elts[1]), node.lineno)  # type: ignore[arg-type]
            elif not (isinstance(value, ast.Call) and any(k.arg in ("status_code", "status") for k in value.keywords)):
                found.setdefault(default, node.lineno)
    return found, throws_at


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions nested in it."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _py_prefixes(trees) -> dict[str, str]:
    prefixes: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if _py_name(node.value.func) in ("APIRouter", "Blueprint"):
                    prefix = _py_str(_kw(node.value, "prefix") or _kw(node.value, "url_prefix"))
                    for target in node.targets:
                        if prefix and isinstance(target, ast.Name):
                            prefixes[target.id] = prefixes.get(target.id, "") + prefix
    for tree in trees:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("include_router", "register_blueprint")
                and node.args
            ):
                prefix = _py_str(_kw(node, "prefix") or _kw(node, "url_prefix"))
                if prefix:
                    var = _py_name(node.args[0])
                    prefixes[var] = prefix + prefixes.get(var, "")
    return prefixes


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _py_name(node: ast.AST | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _py_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _py_int(node: ast.AST | None) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _py_status(node: ast.AST | None) -> int | None:
    """An HTTP status written as a number or as `status.HTTP_404_NOT_FOUND` / `HTTPStatus.NOT_FOUND`-style names."""
    value = _py_int(node)
    if value is None and isinstance(node, ast.Attribute):
        m = re.match(r"HTTP_(\d{3})_", node.attr)
        value = int(m.group(1)) if m else None
    return value if value is not None and 100 <= value <= 599 else None


# -- JavaScript / TypeScript (tree-sitter) ---------------------------------------------------

_FUNCTIONS = {"arrow_function", "function_expression", "function", "function_declaration"}


def js_routes(sources: list[SourceFile]) -> list[CodeRoute]:
    files = {s.rel: s for s in sources if re.search(r"\.(?:js|mjs|cjs|jsx|ts|tsx)$", s.rel)}
    trees = {rel: js_parser(PurePosixPath(rel).suffix).parse(src.text.encode("utf-8")) for rel, src in files.items()}
    file_prefix = _js_mounts(files, trees)
    routes = []
    for rel, tree in trees.items():
        source = files[rel].text.encode("utf-8")
        receivers = _js_app_names(tree.root_node, source)
        functions = _js_named_functions(tree.root_node, source)
        for call in walk_nodes(tree.root_node, "call_expression"):
            found = _js_route(call, source, receivers, functions)
            if found is None:
                continue
            verb, path, handler = found
            statuses, throws_at = _js_statuses(handler, source)
            full = normalize_path(_join(file_prefix.get(rel, ""), path))
            line = call.start_point[0] + 1
            methods = ALL_METHODS if verb == "all" else [verb.upper()]
            routes += [
                CodeRoute(method=m, path=full, file=rel, line=line, statuses=dict(statuses), throws_at=throws_at)
                for m in methods
            ]
    return routes


def _js_route(call, source: bytes, receivers: set[str], functions: dict[str, Any]):
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    if fn is None or args is None or fn.type != "member_expression":
        return None
    prop = fn.child_by_field_name("property")
    verb = _text(prop, source) if prop is not None else ""
    if verb not in JS_VERBS:
        return None
    values = [a for a in args.named_children if a.type != "comment"]
    if len(values) < 2:
        return None  # a route needs a path and a handler
    path = _js_string(values[0], source)
    if path is None or not path.startswith("/"):
        return None
    last = values[-1]
    handler = (
        last if last.type in _FUNCTIONS else functions.get(_text(last, source)) if last.type == "identifier" else None
    )
    receiver = _root_name(fn.child_by_field_name("object"), source)
    if receiver in receivers and handler is not None:
        return verb, path, handler
    if handler is not None and _param_count(handler) >= 2:
        return verb, path, handler  # Express calls a handler with (req, res[, next])
    return None


def _js_statuses(handler, source: bytes) -> tuple[dict[int, int], int | None]:
    found: dict[int, int] = {}
    throws_at = None
    for node in walk_nodes(handler):
        line = node.start_point[0] + 1
        if node.type == "throw_statement" and throws_at is None:
            throws_at = line
        elif node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fn is None or fn.type != "member_expression" or args is None:
                continue
            name = _text(fn.child_by_field_name("property"), source)
            first = next(iter(args.named_children), None)
            if name in ("status", "sendStatus") and first is not None and first.type == "number":
                found.setdefault(int(_text(first, source)), line)
            elif name in ("json", "send", "end", "render", "redirect"):
                obj = fn.child_by_field_name("object")
                if not (obj is not None and obj.type == "call_expression" and _chain_has_status(obj, source)):
                    found.setdefault(200, line)
        elif node.type == "assignment_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if (
                left is not None
                and left.type == "member_expression"
                and _text(left.child_by_field_name("property"), source) == "statusCode"
                and right is not None
                and right.type == "number"
            ):
                found.setdefault(int(_text(right, source)), line)
    return found, throws_at


def _chain_has_status(call, source: bytes) -> bool:
    fn = call.child_by_field_name("function")
    return (
        fn is not None
        and fn.type == "member_expression"
        and _text(fn.child_by_field_name("property"), source) in ("status", "sendStatus")
    )


def _js_app_names(root, source: bytes) -> set[str]:
    """Variables bound to `express()`, `express.Router()`, `Router()` (an app or a router)."""
    out = set()
    for decl in walk_nodes(root, "variable_declarator"):
        name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
        if name is None or value is None or value.type != "call_expression":
            continue
        callee = _text(value.child_by_field_name("function"), source)
        if callee == "express" or callee.endswith("Router") or callee.endswith(".express"):
            out.add(_text(name, source))
    return out


def _js_named_functions(root, source: bytes) -> dict[str, Any]:
    out = {}
    for node in walk_nodes(root):
        if node.type == "function_declaration":
            name = node.child_by_field_name("name")
            if name is not None:
                out[_text(name, source)] = node
        elif node.type == "variable_declarator":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None and value.type in _FUNCTIONS:
                out[_text(name, source)] = value
    return out


def _js_mounts(files: dict[str, SourceFile], trees: dict[str, Any]) -> dict[str, str]:
    """file → the prefix `app.use('/prefix', router)` mounts it under."""
    out: dict[str, str] = {}
    for rel, tree in trees.items():
        source = files[rel].text.encode("utf-8")
        imports = _js_imports(tree.root_node, source)
        for call in walk_nodes(tree.root_node, "call_expression"):
            fn = call.child_by_field_name("function")
            args = call.child_by_field_name("arguments")
            if fn is None or fn.type != "member_expression" or args is None:
                continue
            if _text(fn.child_by_field_name("property"), source) != "use":
                continue
            values = args.named_children
            if len(values) < 2:
                continue
            prefix = _js_string(values[0], source)
            target = _require_target(values[-1], source) or imports.get(_text(values[-1], source))
            resolved = _resolve_js(rel, target, files) if prefix and target else None
            if resolved:
                out[resolved] = prefix  # type: ignore[assignment]
    return out


def _js_imports(root, source: bytes) -> dict[str, str]:
    out = {}
    for decl in walk_nodes(root, "variable_declarator"):
        name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
        target = _require_target(value, source) if value is not None else None
        if name is not None and target:
            out[_text(name, source)] = target
    for imp in walk_nodes(root, "import_statement"):
        src = imp.child_by_field_name("source")
        clause = next((c for c in imp.named_children if c.type == "import_clause"), None)
        default = next((c for c in clause.named_children if c.type == "identifier"), None) if clause else None
        if src is not None and default is not None:
            out[_text(default, source)] = _js_string(src, source) or ""
    return out


def _require_target(node, source: bytes) -> str | None:
    if (
        node is None
        or node.type != "call_expression"
        or _text(node.child_by_field_name("function"), source) != "require"
    ):
        return None
    args = node.child_by_field_name("arguments")
    first = next(iter(args.named_children), None) if args is not None else None
    return _js_string(first, source) if first is not None else None


def _js_string(node, source: bytes) -> str | None:
    if node.type == "string":
        return _text(node, source)[1:-1]
    if node.type == "template_string" and not any(c.type == "template_substitution" for c in node.named_children):
        return _text(node, source)[1:-1]
    return None


def _param_count(fn) -> int:
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    if params is None:
        return 0
    return 1 if params.type == "identifier" else len(params.named_children)


def _root_name(node, source: bytes) -> str:
    while node is not None and node.type in ("member_expression", "call_expression"):
        node = node.child_by_field_name("object") or node.child_by_field_name("function")
    return _text(node, source) if node is not None else ""


def walk_nodes(node, type_: str | None = None) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        if type_ is None or current.type == type_:
            yield current
        stack.extend(reversed(current.children))


def _text(node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace") if node is not None else ""


def _join(prefix: str, path: str) -> str:
    return prefix.rstrip("/") + "/" + path.lstrip("/") if prefix else path


def _resolve_js(importer: str, target: str, files: dict[str, SourceFile]) -> str | None:
    if not target.startswith("."):
        return None
    parts: list[str] = []
    for part in (PurePosixPath(importer).parent / target).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    stem = "/".join(parts)
    for candidate in (stem, f"{stem}.js", f"{stem}.ts", f"{stem}.mjs", f"{stem}/index.js", f"{stem}/index.ts"):
        if candidate in files:
            return candidate
    return None
