"""Chat generations: the request body a conversation sends, and the server-side runner that streams it.

A generation belongs to the server process that started it, never to a browser tab. By concern:
`request` builds the JSON body; `turns` saves a turn's rows and starts, finds or stops its generation;
`tools` continues a turn with tool results;
`generation` is the relay (stream, publish), with `persistence` (its flushes and final row) and `control` (its
channel for stop and snapshot requests); `limits` the
timeouts; `display` the HTML and snapshots the tabs see; `recovery` the heartbeat sweep of dead processes.
Callers use the names below (`services.send(...)`), not the submodules.
"""

from playground.chat.relay.control import generation_group
from playground.chat.relay.display import SNAPSHOT_TIMEOUT, render_message, snapshot_from_database
from playground.chat.relay.generation import KIND, LIVE_LOST_NOTICE, Generation, running
from playground.chat.relay.limits import Limits, limits_of, rejects_stream_options
from playground.chat.relay.persistence import FLUSH_EVERY
from playground.chat.relay.publishing import FRAME, conversation_group
from playground.chat.relay.recovery import ORPHAN_AFTER, beat, interrupt_orphan, mark_interrupted, orphan_wait, sweep
from playground.chat.services.request import (
    CHARS_PER_TOKEN,
    MAX_MESSAGES,
    PART_TYPES,
    PREVIEW_BYTES,
    ChatRequest,
    apply_policy,
    attachment_part,
    build_request,
    chat_models,
    connection_for,
    connection_notice,
    eligible_history,
    left_out_words,
    lost_connection,
    pick_model,
    preview_request,
    selected_model,
    turns_left_out,
)
from playground.chat.services.tools import (
    ToolResultsError,
    clean_results,
    pending_calls,
    prepare_tool_results,
    submit_tool_results,
)
from playground.chat.services.turns import (
    LiveUnavailable,
    Turn,
    check_live,
    history_rows,
    launcher,
    prepare_turn,
    request_stop,
    save_attachments,
    send,
    start,
    start_turn,
    store_uploads,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "FLUSH_EVERY",
    "FRAME",
    "KIND",
    "LIVE_LOST_NOTICE",
    "MAX_MESSAGES",
    "ORPHAN_AFTER",
    "PART_TYPES",
    "PREVIEW_BYTES",
    "SNAPSHOT_TIMEOUT",
    "ChatRequest",
    "Generation",
    "Limits",
    "LiveUnavailable",
    "ToolResultsError",
    "Turn",
    "apply_policy",
    "attachment_part",
    "beat",
    "build_request",
    "chat_models",
    "check_live",
    "clean_results",
    "connection_for",
    "connection_notice",
    "conversation_group",
    "eligible_history",
    "generation_group",
    "history_rows",
    "interrupt_orphan",
    "launcher",
    "left_out_words",
    "limits_of",
    "lost_connection",
    "mark_interrupted",
    "orphan_wait",
    "pending_calls",
    "pick_model",
    "prepare_tool_results",
    "prepare_turn",
    "preview_request",
    "rejects_stream_options",
    "render_message",
    "request_stop",
    "running",
    "save_attachments",
    "selected_model",
    "send",
    "snapshot_from_database",
    "start",
    "start_turn",
    "store_uploads",
    "submit_tool_results",
    "sweep",
    "turns_left_out",
]
