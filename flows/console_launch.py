"""The console's way into Prefect: is the devloop deployment there, and start a run of it (without waiting).

`graphlemon.console.launch` decides *whether* a goal runs as a deployment run or a local process; the calls that
talk to Prefect live here, in the Prefect layer (the domain never imports Prefect).
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.settings import PREFECT_API_URL, temporary_settings

from graphlemon.errors import ErrorCode, GraphLemonError


def deployment_exists(name: str, api_url: str) -> bool:
    """Whether `name` is deployed on the API at `api_url`; an API that does not answer is EXECUTOR_ERROR (never a
    silent local run instead)."""
    try:
        with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            client.read_deployment_by_name(name)
        return True
    except ObjectNotFound:
        return False
    except Exception as exc:  # noqa: BLE001 - whatever the transport said, the API did not answer
        raise GraphLemonError(
            ErrorCode.EXECUTOR_ERROR,
            f"the Prefect API at {api_url} did not answer ({exc}); start it, or unset PREFECT_API_URL to run goals "
            "as local processes",
        ) from None


def start_devloop_run(name: str, parameters: dict) -> str:
    """A run of the deployment `name`, left to its worker; its flow run id."""
    return str(run_deployment(name, parameters=parameters, timeout=0).id)
