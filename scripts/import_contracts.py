"""GraphLemon's own import-linter contract types (`[tool.importlinter] contract_types` in pyproject.toml, checked
by `lint-imports` in `make lint`):

* `forbidden_below`: the `forbidden` contract with its sources derived, not listed: every module of `container`
  (its own `__init__` and each child package or module, as a package) but the children named in `apart`. A module
  added under graphlemon/ is a source from the moment it exists.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.domain import fields
from importlinter.domain.contract import ContractCheck, InvalidContractOptions
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
