"""The ledger's sums the team pages read. The checks live in the gate (playground/connections/gate.py) and the
ledger beside it (ledger.py): opening a connection is the check; no feature imports this app."""

from playground.connections.ledger import month_start, next_month, settled_tokens, tokens_this_month

__all__ = ["month_start", "next_month", "settled_tokens", "tokens_this_month"]
