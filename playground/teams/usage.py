"""The ledger's sums the team pages read. The checks and the ledger live in the gate
(playground/connections/gate.py): opening a connection is the check; no feature imports this app."""

from playground.connections.gate import month_start, next_month, settled_tokens, tokens_this_month

__all__ = ["month_start", "next_month", "settled_tokens", "tokens_this_month"]
