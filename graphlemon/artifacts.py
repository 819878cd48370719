"""Versioned artifacts with lineage (REQ-02, c_artifact_write).

An artifact is a file under `.graphlemon/artifacts/<type>/` plus an
`ArtifactRecord` in `artifacts.ndjson`. Versions count up per (type, unit).
Writing an artifact whose `depends_on_artifact_ids` names an artifact that does
not exist is refused (ARTIFACT_NOT_FOUND) and writes nothing.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from .errors import ErrorCode, GraphLemonError, invalid_param
from .ledger import Ledger
from .models import ArtifactRecord, ArtifactType
from .redact import write_redacted

ARTIFACTS_DIR = "artifacts"


class ArtifactStore:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.root = ledger.state_dir / ARTIFACTS_DIR

    def records(self) -> list[ArtifactRecord]:
        return self.ledger.read_as("artifact", ArtifactRecord)

    def get(self, artifact_id: str) -> ArtifactRecord:
        for record in self.records():
            if record.artifact_id == artifact_id:
                return record
        raise GraphLemonError(ErrorCode.ARTIFACT_NOT_FOUND, f"no artifact {artifact_id!r}", artifact_id=artifact_id)

    def latest(self, artifact_type: ArtifactType, *, unit_id: str | None = None, task_id: str | None = None):
        found = [
            r
            for r in self.records()
            if r.artifact_type == artifact_type
            and (unit_id is None or r.unit_id == unit_id)
            and (task_id is None or r.task_id == task_id)
        ]
        return max(found, key=lambda r: r.version) if found else None

    def read_text(self, record: ArtifactRecord) -> str:
        return (self.ledger.state_dir / record.path).read_text(encoding="utf-8")

    def lineage(self, artifact_id: str) -> list[ArtifactRecord]:
        """The artifact and everything it depends on, depth first (sdd -> prd -> brd)."""
        by_id = {r.artifact_id: r for r in self.records()}
        out: list[ArtifactRecord] = []
        stack = [artifact_id]
        while stack:
            current = by_id.get(stack.pop())
            if current is None or current in out:
                continue
            out.append(current)
            stack.extend(reversed(current.depends_on_artifact_ids))
        return out

    def write(
        self,
        artifact_type: ArtifactType,
        content: str,
        *,
        depends_on: Sequence[str] = (),
        task_id: str | None = None,
        unit_id: str | None = None,
        title: str | None = None,
        suffix: str = ".md",
    ) -> ArtifactRecord:
        """c_artifact_write: a new version of an artifact; refuses unknown dependencies. Writing the same content
        as the latest version again returns that version (stages re-run after a crash stay idempotent)."""
        if not content.strip():
            raise invalid_param(f"{artifact_type} artifact is empty")
        with self.ledger.transaction("artifact") as tx:
            existing = [r for r in tx.records() if isinstance(r, ArtifactRecord)]
            known = {r.artifact_id for r in existing}
            missing = [a for a in depends_on if a not in known]
            if missing:
                raise GraphLemonError(
                    ErrorCode.ARTIFACT_NOT_FOUND,
                    f"cannot write {artifact_type}: depends_on_artifact_ids names unknown artifact(s) {', '.join(missing)}",
                    missing=missing,
                )
            same = [r for r in existing if r.artifact_type == artifact_type and r.unit_id == unit_id]
            digest = hashlib.sha256(content.encode()).hexdigest()
            latest = max(same, key=lambda r: r.version, default=None)
            if latest is not None and latest.sha256 == digest and latest.task_id == task_id and latest.depends_on_artifact_ids == list(depends_on):
                return latest  # the same content again (a resumed stage): no new version
            version = 1 + (latest.version if latest else 0)
            name = f"{artifact_type}-{unit_id}-v{version}{suffix}" if unit_id else f"{artifact_type}-v{version}{suffix}"
            rel = Path(ARTIFACTS_DIR) / artifact_type / name
            _atomic_write(self.ledger.state_dir / rel, content)
            record = ArtifactRecord(
                artifact_id=f"art-{artifact_type}-{secrets.token_hex(3)}",
                artifact_type=artifact_type,
                version=version,
                path=str(rel),
                sha256=digest,
                task_id=task_id,
                unit_id=unit_id,
                depends_on_artifact_ids=list(depends_on),
                title=title,
            )
            tx.append(record)
        return record


def _atomic_write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_redacted(tmp, content)
    os.replace(tmp, path)
