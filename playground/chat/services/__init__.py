"""Chat's services: a turn from its request body to its rows and its generation, over rows the commands read.

`request` builds the JSON body a conversation sends (and its preview); `turns` saves a turn's rows, opens the gate
for it through the one door every turn passes (`open_turns`: the user's answers at once, then a pass per request)
and starts, finds or stops its generation; `tools` continues a turn with tool results; `branches` and `compare` are
the branch and comparison operations. The commands (chat/commands.py) check ownership once and call these.
The relay that streams a generation is `chat/relay/` (its own names are imported from there, not from here).
Callers use the names below (`services.send(...)`); the operations are imported from their modules.
"""

from playground.chat.services.request import (
    MAX_MESSAGES,
    PART_TYPES,
    apply_policy,
    build_request,
    connection_for,
    connection_notice,
    left_out_words,
    lost_connection,
    preview_request,
    selected_model,
    turns_left_out,
)
from playground.chat.services.tools import ToolResultsError, pending_calls, submit_tool_results
from playground.chat.services.turns import (
    LiveUnavailable,
    Turn,
    check_live,
    history_rows,
    launcher,
    prepare_turn,
    request_stop,
    send,
    start_turn,
)

__all__ = [
    "MAX_MESSAGES",
    "PART_TYPES",
    "LiveUnavailable",
    "ToolResultsError",
    "Turn",
    "apply_policy",
    "build_request",
    "check_live",
    "connection_for",
    "connection_notice",
    "history_rows",
    "launcher",
    "left_out_words",
    "lost_connection",
    "pending_calls",
    "prepare_turn",
    "preview_request",
    "request_stop",
    "selected_model",
    "send",
    "start_turn",
    "submit_tool_results",
    "turns_left_out",
]
