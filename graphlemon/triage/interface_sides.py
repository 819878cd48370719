"""The interface as the other sides state it: contract.json (exports, consumes), the code's routes, the trace.

contract.json is JSON, read through its model (`graphlemon.units.Contract`); a fact's line is the line of the
file that holds the endpoint's path, then its status key, then its field key. The code's routes come from
`handlers.py` (Python's `ast`, tree-sitter); the trace's operations are the calls the run made, one each.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .cite import Citer
from .interface import Operation, Quote, field_paths
from .run_context import RunContext


@dataclass
class Interfaces:
    """Every side's operations for one run, built once."""

    ctx: RunContext

    @cached_property
    def _citer(self) -> Citer:
        return Citer(self.ctx)

    @cached_property
    def spec(self) -> list[Operation]:
        return self.ctx.spec_operations

    @cached_property
    def contracts(self) -> list[Operation]:
        """Exports (side "contract") and consumes (side "consumer") of every unit's contract.json."""
        out = []
        for unit_id, contract in self.ctx.contracts.items():
            rel = self.ctx.contract_rel(unit_id)
            for ep in contract.exports.http:
                out.append(self._contract_op("contract", unit_id, unit_id, ep, rel))
            for ep in contract.consumes:
                out.append(self._contract_op("consumer", unit_id, ep.unit_id, ep, rel))
        return out

    @cached_property
    def code(self) -> list[Operation]:
        out = []
        for unit_id in self.ctx.units.ids():
            for route in self.ctx.code_diff(unit_id).routes:
                op = Operation("code", unit_id, unit_id, route.method, route.path, Quote(route.file, route.line))
                for status, line in route.statuses.items():
                    op.add_status(status, Quote(route.file, line))
                out.append(op)
        return out

    def of(self, side: str, provider: str | None, method: str | None, path: str) -> list[Operation]:
        """The operations of `side` about `provider`'s endpoint that serves (method, path)."""
        pool = self.spec if side == "spec" else self.code if side == "code" else self.contracts
        return [
            op
            for op in pool
            if op.side == side and op.serves(method, path) and (provider is None or op.provider in (provider, None))
        ]

    def provided_by(self, side: str, provider: str, method: str | None) -> list[Operation]:
        pool = self.spec if side == "spec" else self.code if side == "code" else self.contracts
        return [
            op
            for op in pool
            if op.side == side and op.provider == provider and (method is None or op.method in (method, None))
        ]

    def _contract_op(self, side, unit_id: str, provider: str | None, ep, rel: str) -> Operation:
        at = self._citer.find(rel, f'"{ep.path}"') or 1
        op = Operation(side, unit_id, provider, ep.method, ep.path, Quote(rel, at))
        for status, response in ep.responses.items():
            s_at = self._citer.find(rel, f'"{status}"', at) or at
            op.add_status(status, Quote(rel, s_at))
            if isinstance(response.body, dict):
                for name in field_paths(response.body):
                    leaf = name.rsplit(".", 1)[-1]
                    op.add_fields(status, [name], Quote(rel, self._citer.find(rel, f'"{leaf}"', s_at) or s_at))
        return op
