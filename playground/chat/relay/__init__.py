"""Generation and relay: a generation streams one answer from its provider and relays it to the conversation's
tabs. By concern: `generation` (the stream, its lifecycle), whose parts are each given the state they work on:
`answer` (what arrived, and what the tabs were not sent yet), `publishing` (what the tabs were shown: deltas by
frame, snapshots), `persistence` (its rows and usage) and `control` (its channel for stop and snapshot requests).
Beside them: `chunks` (what an answer's chunks or whole response say), `fanout` and `flushes` (the per-delta relay
and the batched writes), `limits` (timeouts, failures in words, and the user's answers at once, which every turn's
door checks), `display` (the HTML and snapshots the tabs see), `recovery` (the heartbeat sweep of dead processes)
and `usage` (estimated token counts). It knows nothing of how turns or requests are made."""
