"""Generation and relay: a generation streams one answer from its provider and relays it to the conversation's
tabs. By concern: `generation` (the stream, its lifecycle), `fanout` and `flushes` (the per-delta relay and the
batched writes), `persistence` (its rows and usage), `control` (its channel for stop and snapshot requests),
`limits` (timeouts and capacity), `display` (the HTML and snapshots the tabs see), `recovery` (the heartbeat sweep
of dead processes) and `usage` (estimated token counts). It knows nothing of how turns or requests are made."""
