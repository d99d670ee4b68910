"""Generation and relay: a generation streams one answer from its provider and relays it to the conversation's
tabs. By concern: `generation` (the stream, its lifecycle), `chunks` (what an answer's chunks or whole response
say), `fanout` and `flushes` (the per-delta relay and the batched writes), `persistence` (its rows and usage),
`control` (its channel for stop and snapshot requests), `limits` (timeouts, failures in words, and the user's
answers at once, which every turn's door checks), `display` (the HTML and snapshots the tabs see), `recovery` (the
heartbeat sweep of dead processes) and `usage` (estimated token counts). It knows nothing of how turns or requests
are made."""
