from django.utils import timezone

from playground.connections import gate
from playground.connections.models import Connection
from playground.upstream import client
from playground.upstream.errors import UpstreamError

# A cheap, harmless call every provider of the spec answers: the voice list needs only a valid key.
# GET /models is tried first where the provider offers it.


async def test_connection(connection: Connection, user) -> tuple[bool, str]:
    """Make a real upstream call (through the gate, as `user`) and describe the outcome in words."""
    try:
        async with gate.opened(connection, user, "test", tokens=0) as ticket:
            try:
                result = await client.models(ticket.endpoint)
                count = len(result.data.get("data", [])) if isinstance(result.data, dict) else 0
                ok, message = True, f"Connected: the key works and {count} models are listed."
            except UpstreamError as error:
                if error.status not in (404, 405):
                    raise
                await client.voices(ticket.endpoint)
                ok, message = True, "Connected: the key works (this provider does not list its models)."
    except gate.Refused as refusal:
        ok, message = False, refusal.message
    except UpstreamError as error:
        ok, message = (
            False,
            {
                401: "Key rejected (401): check the API key.",
                403: "Permission denied (403): the account needs verification or permission.",
                404: "Not found (404): check that the base URL is the API root ending in /v1.",
            }.get(error.status or 0, f"{error.title}: {error.message}"),
        )
    connection.last_tested = timezone.now()
    connection.last_test_ok = ok
    connection.last_test_message = message[:500]
    await connection.asave(update_fields=["last_tested", "last_test_ok", "last_test_message"])
    return ok, message
