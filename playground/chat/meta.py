"""The figures under a finished answer (its footer: finish reason, token counts, timings, trace id), as data.

The article's template (chat/_message.html) lays them out, and the end of a live answer carries the same rows in
its `done` event (relay/generation.py), from which the page that watched it builds the footer itself
(static/js/chat/final.js): one list of rows for both, so they cannot drift apart.
"""

ESTIMATED = (
    "The answer ended before the provider sent its token counts: these are estimates (about one token per "
    "streamed delta)."
)


def meta_of(message) -> dict | None:
    """{"rows": [[term, value, title]], "trace_id": str} for an answer's footer, or None when it has none."""
    if message.role != "assistant" or message.is_streaming:
        return None
    if not (message.usage or message.trace_id or message.total_ms):
        return None
    estimated = isinstance(message.usage, dict) and bool(message.usage.get("estimated"))
    about = "≈" if estimated else ""
    rows = []
    if message.finish_reason:
        rows.append(["finish", message.finish_reason, ""])
    if message.prompt_tokens is not None:
        rows.append(["prompt", f"{about}{message.prompt_tokens}", ""])
    if message.completion_tokens is not None:
        rows.append(["completion", f"{about}{message.completion_tokens}", ""])
    if estimated:
        rows.append(["counts", "estimated", ESTIMATED])
    if message.reasoning_tokens:
        rows.append(["reasoning", str(message.reasoning_tokens), ""])
    if message.cached_tokens is not None:
        rows.append(["cached", str(message.cached_tokens), ""])
    if message.ttft_ms is not None:
        rows.append(["TTFT", f"{message.ttft_ms} ms", ""])
    if message.total_ms is not None:
        rows.append(["total", f"{message.total_ms} ms", ""])
    params = message.params if isinstance(message.params, dict) else {}
    if message.tokens_per_second and params.get("stream") is not False:
        rows.append(["speed", f"{message.tokens_per_second} tok/s", ""])
    return {"rows": rows, "trace_id": message.trace_id or ""}
