"""GitRemote: the URL of a project's git remote, kept secret (an HTTPS token in it), for unit loops on workers that
share no filesystem with the devloop (docs/scale.md).

Register: `prefect block register -f blocks/git_remote.py`; create in the UI or with
`GitRemote(url="https://bot:<token>@git.internal/app.git").save("app")`, then set the project's `git_remote` to
`block:app`. The devloop and each worker load the block themselves: the URL never travels in a run's parameters.
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from graphlemon.devloop.remote_git import BLOCK_PREFIX
from graphlemon.errors import invalid_param


class GitRemote(Block):
    _block_type_name = "GraphLemon Git Remote"
    _block_type_slug = "graphlemon-git-remote"
    _description = "A git remote URL (kept secret: it may hold a token) for GraphLemon's remote unit loops."

    url: SecretStr = Field(description="file://, git://, ssh:// or http(s):// URL git can fetch from and push to.")


def resolve_remote(reference: str) -> str:
    """A project's `git_remote` as a URL: `block:<name>` is the GitRemote block `name`; anything else is the URL."""
    if not reference.startswith(BLOCK_PREFIX):
        return reference
    name = reference.removeprefix(BLOCK_PREFIX)
    try:
        return GitRemote.load(name).url.get_secret_value()
    except ValueError as exc:
        raise invalid_param(f"git remote {reference!r}: no GitRemote block {name!r} ({exc})") from None
