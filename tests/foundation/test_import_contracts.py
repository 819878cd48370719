"""The import contracts `make lint` checks (pyproject.toml [tool.importlinter], scripts/import_contracts.py), run on
graphlemon's real import graph as grimp builds it, and on that graph with a module or an import planted in memory
(no file is written): a new domain module importing Prefect breaks the domain contract without being named anywhere,
and a new cycle, or a listed cycle that is gone, breaks the acyclic one."""

from __future__ import annotations

import ast
import copy
import re
import sys
import tomllib
from pathlib import Path

import grimp
import pytest
from importlinter import configuration

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # scripts/ as lint-imports finds it (from the repository's root)

from scripts.import_contracts import AcyclicContract, ForbiddenBelowContract, module_cycles  # noqa: E402

configuration.configure()  # what lint-imports sets up before it checks a contract
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def _contract(kind):
    [options] = [c for c in CONFIG["contracts"] if c["type"] == kind.type_name]
    session = {k: v for k, v in CONFIG.items() if k != "contracts"}
    return kind(name=options["name"], session_options=session, contract_options=options)


@pytest.fixture(scope="module")
def built():
    return grimp.build_graph("graphlemon", include_external_packages=True, cache_dir=None)


@pytest.fixture
def graph(built):
    return copy.deepcopy(built)


def _plant(graph, importer: str, imported: str) -> None:
    if importer not in graph.modules:
        graph.add_module(importer)
    graph.add_import(importer=importer, imported=imported, line_number=1, line_contents=f"import {imported}")


def test_the_domain_contract_holds_and_its_sources_are_every_module_but_the_prefect_layers(graph):
    contract = _contract(ForbiddenBelowContract)
    assert contract.check(graph, verbose=False).kept
    sources = {str(m.expression) for m in contract.source_modules}
    apart = {"graphlemon.flows", "graphlemon.tasks", "graphlemon.blocks", "graphlemon.analytics"}
    assert sources == graph.find_children("graphlemon") - apart
    assert {"graphlemon.cli", "graphlemon.stages", "graphlemon.gc"} <= sources  # derived from the graph, not a list


@pytest.mark.parametrize(
    "importer, imported",
    [
        ("graphlemon.planted", "prefect"),  # a new top-level module
        ("graphlemon.triage.planted", "prefect"),  # a new module inside a domain package
        ("graphlemon.planted_pkg.deep", "graphlemon.flows.devloop"),  # a new package reaching a Prefect layer
        ("graphlemon", "prefect"),  # graphlemon's own __init__
    ],
)
def test_a_planted_domain_module_importing_prefect_breaks_the_domain_contract(graph, importer, imported):
    if importer.endswith(".deep"):
        graph.add_module(importer.rpartition(".")[0])
    _plant(graph, importer, imported)
    check = _contract(ForbiddenBelowContract).check(graph, verbose=False)
    assert not check.kept
    links = [link for c in check.metadata["invalid_chains"] for chain in c["chains"] for link in chain]
    assert (importer, imported) in {(link["importer"], link["imported"]) for link in links}


def test_a_prefect_layer_importing_prefect_is_its_job(graph):
    _plant(graph, "graphlemon.flows.planted", "prefect")
    assert _contract(ForbiddenBelowContract).check(graph, verbose=False).kept


def test_the_cycles_left_are_exactly_the_one_listed_with_its_owner(graph):
    contract = _contract(AcyclicContract)
    assert contract.check(graph, verbose=False).kept
    assert module_cycles(graph, "graphlemon") == [
        ["graphlemon.triage.agent", "graphlemon.triage.triager"],
    ]
    assert all(entry.split(":")[0] in ("journal", "triage") for entry in contract.allowed)


@pytest.mark.parametrize(
    "edges",
    [
        [("graphlemon.ledger", "graphlemon.models"), ("graphlemon.models", "graphlemon.ledger")],  # two modules
        [("graphlemon.agents", "graphlemon.agents.factory"), ("graphlemon.agents.factory", "graphlemon.agents")],
        [("graphlemon.errors", "graphlemon.errors")],  # a module importing itself
    ],
)
def test_a_new_cycle_breaks_the_acyclic_contract(graph, edges):
    for importer, imported in edges:
        _plant(graph, importer, imported)
    check = _contract(AcyclicContract).check(graph, verbose=False)
    assert not check.kept
    [cycle] = check.metadata["unlisted"]
    assert {a for a, _, _ in cycle} == {a for a, _ in edges}


def test_a_listed_cycle_that_is_gone_breaks_it_so_the_list_only_shrinks(graph):
    graph.remove_import(importer="graphlemon.triage.triager", imported="graphlemon.triage.agent")
    check = _contract(AcyclicContract).check(graph, verbose=False)
    assert not check.kept and check.metadata["gone"] == [["graphlemon.triage.agent", "graphlemon.triage.triager"]]


def test_docs_prefect_names_exactly_the_prefect_modules_graphlemon_imports_and_none_is_private():
    """docs/prefect.md's first paragraph lists the Prefect modules GraphLemon imports (each in backticks): the list is
    read from the code (every `import prefect…` / `from prefect… import`, in functions too) and must match it."""
    imported = set()
    for path in [p for top in ("graphlemon", "flows", "tasks", "blocks", "analytics") for p in (ROOT / top).rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            imported |= {n for n in names if n == "prefect" or n.startswith("prefect.")}
    assert imported and not [m for m in imported if any(part.startswith("_") for part in m.split("."))]
    first = (ROOT / "docs" / "prefect.md").read_text(encoding="utf-8").split("\n\n")[1]
    named = set(re.findall(r"`(prefect(?:\.[a-z_]+)*)`", first))
    assert named == imported, f"docs/prefect.md names {sorted(named - imported)} and misses {sorted(imported - named)}"
