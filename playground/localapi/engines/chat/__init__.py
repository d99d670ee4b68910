"""Chat completions of the local API without the HTTP: validation (spec 2.1-2.4, 8), media decoding,
generation with stop / max_tokens / n applied, usage, and the stream of chunks (spec 6).

Pure Python and asyncio; the view adds auth, faults, rate limits and the HTTP response.

Choices made where the spec is silent (documented in /local/v1/openapi.json too):
- A parameter that exists in the API but not for the chosen model is a 400 with code 20016; fields unknown to
  the whole API are ignored; a null value counts as absent.
- Text models accept `content` as a string or an array of text parts; media parts need a multimodal model.
- The role `tool` (OpenAI) is accepted by models that support tools, after an assistant message with tool_calls.
- Media parts are base64 `data:` URIs or http(s) addresses, fetched through the outbound guard
  (playground/lib/fetch.py: allowed hosts only, timeouts, the size limit of data URIs, the part's content type).
- `n` is at most 8. `max_tokens` bounds the answer; reasoning is bounded by `thinking_budget` instead.
  `max_tokens` above the model's max_output is a 400; without it, the answer may use
  min(max_output, context window - input tokens).
- temperature 0-2, top_p (0, 1], top_k -1-100 (-1 or 0 disable it), frequency/presence penalty -2-2.

By concern: `validation` checks the request; `completion` decodes media, generates, counts usage and builds
the body and the chunks. Callers use the names below (`chat.prepare(...)`).
"""

from playground.localapi.engines.chat.completion import (
    Choice,
    Prepared,
    chunk_deltas,
    completion,
    completion_id,
    cut,
    fingerprint,
    message_of,
    pieces,
    prepare,
    prompt_cache,
    run,
    usage,
)
from playground.localapi.engines.chat.validation import (
    EFFORT,
    INVALID,
    MAX_N,
    UNKNOWN_MODEL,
    UNSUPPORTED,
    InvalidRequest,
    validate,
)

__all__ = [
    "EFFORT",
    "INVALID",
    "MAX_N",
    "UNKNOWN_MODEL",
    "UNSUPPORTED",
    "Choice",
    "InvalidRequest",
    "Prepared",
    "chunk_deltas",
    "completion",
    "completion_id",
    "cut",
    "fingerprint",
    "message_of",
    "pieces",
    "prepare",
    "prompt_cache",
    "run",
    "usage",
    "validate",
]
