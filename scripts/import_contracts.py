"""GraphLemon's own import-linter contract types (`[tool.importlinter] contract_types` in pyproject.toml, checked
by `lint-imports` in `make lint`):

* `forbidden_below`: the `forbidden` contract with its sources derived, not listed: every module of `container`
  (its own `__init__` and each child package or module, as a package) but the children named in `apart`. A module
  added under graphlemon/ is a source from the moment it exists.
* `acyclic`: no import cycle among the modules of `container` (a package's `__init__` and its own modules
  included; imports inside functions and under TYPE_CHECKING count), except the cycles listed in `allowed`, each
  as `owner: module <-> module ...`. A listed cycle that no longer exists as listed breaks the contract too, so the
  list only shrinks.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck, InvalidContractOptions
from importlinter.domain.imports import ModuleExpression


class ForbiddenBelowContract(ForbiddenContract):
    type_name = "forbidden_below"

    container = fields.StringField()
    apart = fields.SetField(subfield=fields.StringField())  # children of `container` that are no source
    source_modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)  # derived: not given

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        container = str(self.container)
        apart = {f"{container}.{name}" for name in self.apart}  # type: ignore[attr-defined]
        children = graph.find_children(container)
        if not apart <= children:
            raise InvalidContractOptions({"apart": f"not children of {container}: {sorted(apart - children)}"})
        self.source_modules = {ModuleExpression(m) for m in sorted(children - apart)}
        check = super().check(graph, verbose)
        own = self._own_imports(graph, container)
        if own:
            check.kept = False
            check.metadata["invalid_chains"] = sorted(
                check.metadata["invalid_chains"] + own, key=lambda c: (c["upstream_module"], c["downstream_module"])
            )
        return check

    def _own_imports(self, graph: ImportGraph, container: str) -> list[dict]:
        """The container's own module (its __init__) importing a forbidden module directly (what it reaches through
        its children, the children's own check finds)."""
        forbidden = [str(m.expression) for m in self.forbidden_modules]  # type: ignore[attr-defined]
        found = []
        for imported in sorted(graph.find_modules_directly_imported_by(container)):
            for name in forbidden:
                if imported == name or imported.startswith(f"{name}."):
                    lines = tuple(d["line_number"] for d in graph.get_import_details(importer=container,
                                                                                      imported=imported))  # fmt: skip
                    link = {"importer": container, "imported": imported, "line_numbers": lines}
                    found.append({"upstream_module": name, "downstream_module": container, "chains": [[link]]})
        return found


class AcyclicContract(Contract):
    type_name = "acyclic"

    container = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField(), required=False)  # "owner: a <-> b <-> c"

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        allowed = {frozenset(modules): owner for owner, modules in map(_parse_allowed, self.allowed or [])}  # type: ignore[attr-defined]
        cycles = module_cycles(graph, str(self.container))
        unlisted = [c for c in cycles if frozenset(c) not in allowed]
        gone = sorted(sorted(m) for m in allowed if sorted(m) not in cycles)
        return ContractCheck(
            kept=not unlisted and not gone,
            warnings=[],
            metadata={"unlisted": [_edges(graph, c) for c in unlisted], "gone": gone, "allowed": len(allowed)},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for edges in check.metadata["unlisted"]:
            modules = sorted({a for a, _, _ in edges})
            output.print_error(f"An import cycle among {len(modules)} modules: {', '.join(modules)}")
            for importer, imported, lines in edges:
                output.print(f"    {importer} -> {imported} (l. {', '.join(map(str, lines))})")
            output.print(
                "  Break it by moving what both sides use into a lower module (never a lazy import: it is still a"
                " cycle here)."
            )
            output.new_line()
        for modules in check.metadata["gone"]:
            output.print_error(f"A cycle listed in `allowed` no longer exists as listed: {' <-> '.join(modules)}")
            output.print("  Take it out of the list (or list the cycle as it now is).")
            output.new_line()


def module_cycles(graph: ImportGraph, container: str) -> list[list[str]]:
    """Every import cycle among the modules of `container` (a strongly connected set of more than one module, or a
    module importing itself), each sorted; Tarjan's algorithm, iteratively."""
    modules = {container} | graph.find_descendants(container)
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(edges[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    cycles.append(sorted(component))
    return sorted(cycles)


def _parse_allowed(entry: str) -> tuple[str, frozenset[str]]:
    owner, sep, cycle = entry.partition(":")
    modules = frozenset(m.strip() for m in cycle.split("<->") if m.strip())
    if not sep or not owner.strip() or len(modules) < 2:
        raise InvalidContractOptions({"allowed": f"{entry!r}: write it as 'owner: module <-> module ...'"})
    return owner.strip(), modules


def _edges(graph: ImportGraph, cycle: list[str]) -> list[tuple[str, str, tuple[int, ...]]]:
    members = set(cycle)
    return [
        (a, b, tuple(d["line_number"] for d in graph.get_import_details(importer=a, imported=b)))
        for a in cycle
        for b in sorted(graph.find_modules_directly_imported_by(a))
        if b in members
    ]
