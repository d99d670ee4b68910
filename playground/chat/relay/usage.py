"""Token counts of an answer that ended before its provider sent them."""

CHARS_PER_TOKEN = 4  # a rough estimate of a prompt's tokens from its characters (also the context check's)


def estimated_usage(body: dict, content_deltas: int, reasoning_deltas: int) -> dict:
    """Token counts of an answer that ended before the provider sent its usage (stopped, interrupted).

    Streams carry about one token per delta; the prompt is estimated from its characters. Marked `estimated`."""
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [] if isinstance(m, dict))
    prompt_tokens = prompt // CHARS_PER_TOKEN + 1
    completion = content_deltas + reasoning_deltas
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
        "estimated": True,
    }
    if reasoning_deltas:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_deltas}
    return usage
