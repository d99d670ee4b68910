"""What the team pages say about a conversation's team connection. The checks and the ledger live in the gate
(playground/connections/gate.py): opening a connection is the check; no feature imports this app."""

from playground.connections.gate import month_start, next_month, settled_tokens, tokens_this_month
from playground.teams.models import ConnectionLoss, Membership

__all__ = ["connection_notice", "lost_connection", "month_start", "next_month", "settled_tokens", "tokens_this_month"]


def lost_connection(conversation) -> str | None:
    """In words, when the conversation's team connection was deleted (alone or with its team); else None."""
    if conversation.pk is None or conversation.connection_id is not None:
        return None
    loss = ConnectionLoss.objects.filter(conversation_id=conversation.pk).first()
    return loss.words if loss else None


def connection_notice(conversation, user) -> str | None:
    """What the conversation page says when its team connection cannot be used any more (and nothing is sent)."""
    if conversation.connection_id is None:
        return lost_connection(conversation)
    connection = conversation.connection
    if connection.team_id is None:
        return None
    team = connection.team
    if connection.revoked:
        return (
            f"The team connection “{connection.name}” of {team.name} was revoked, so this conversation has no "
            "connection. Pick another connection to continue: nothing is sent until you do."
        )
    if not Membership.objects.filter(team_id=team.pk, user=user).exists():
        return (
            f"You are no longer a member of {team.name}, so its connection “{connection.name}” cannot be used. "
            "Pick another connection to continue: nothing is sent until you do."
        )
    return None
