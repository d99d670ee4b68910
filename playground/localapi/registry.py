"""The local models and what each of them accepts, declared once.

Chat models cover every capability family of the spec:

| id | family | extra parameters / inputs |
|---|---|---|
| local/chat | plain text chat | — (no tools: sending `tools` gives 400 code 20016) |
| local/tools | function calling | tools, tool_choice, role `tool` messages |
| local/reasoner | reasoning | enable_thinking, thinking_budget, tools |
| local/reasoner-effort | reasoning with effort | enable_thinking, reasoning_effort, tools |
| local/minp | min_p family | min_p |
| local/vision | multimodal | image_url parts |
| local/omni | multimodal | image_url, audio_url, video_url parts |
| local/ocr | multimodal OCR | image_url parts holding a PDF or an image; `detail` is refused |
| local/vision-b64 | multimodal | image_url parts with base64 data only |
| local/verified | plain text chat | needs real-name verification: always 403 |

Rerank models: local/reranker (max_chunks_per_doc, overlap_tokens), local/reranker-instruct (also instruction),
local/reranker-lite (none of these). Speech: local/tts.
"""

from dataclasses import dataclass, field

# Parameters every chat model accepts (beyond model and messages).
COMMON_CHAT_PARAMS = frozenset(
    {
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "temperature",
        "top_p",
        "top_k",
        "frequency_penalty",
        "presence_penalty",
        "n",
        "seed",
        "response_format",
        "user",
    }
)
TOOL_PARAMS = frozenset({"tools", "tool_choice", "parallel_tool_calls"})
# Parameters that exist somewhere in the API: unknown to the chosen model they are a 400 (20016), while
# fields that exist nowhere are ignored, as JSON APIs usually do.
ALL_CHAT_PARAMS = COMMON_CHAT_PARAMS | TOOL_PARAMS | {"enable_thinking", "thinking_budget", "reasoning_effort", "min_p"}


@dataclass(frozen=True)
class LocalModel:
    id: str
    kind: str  # "chat" | "rerank" | "speech"
    description: str
    capabilities: dict = field(default_factory=dict)
    context_window: int = 32768
    max_output: int = 8192
    needs_verification: bool = False
    created: int = 1735689600  # 2025-01-01, fixed so listings are stable

    @property
    def params(self) -> frozenset[str]:
        return frozenset(self.capabilities.get("params", ()))

    def supports(self, param: str) -> bool:
        return param in self.params

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.capabilities.get("inputs", ("text",)))

    @property
    def multimodal(self) -> bool:
        return self.capabilities.get("variant") == "multimodal"


def _chat(id, description, *, extra=(), inputs=("text",), variant="text", **kwargs) -> LocalModel:
    caps = {
        "variant": variant,
        "inputs": list(inputs),
        "params": sorted(COMMON_CHAT_PARAMS | set(extra)),
        "reasoning": "enable_thinking" in extra or "reasoning_effort" in extra,
        "tools": "tools" in extra,
        "streaming": True,
    }
    for key in ("base64_images_only", "pdf", "detail"):
        if key in kwargs:
            caps[key] = kwargs.pop(key)
    caps.setdefault("detail", variant == "multimodal")
    return LocalModel(id=id, kind="chat", description=description, capabilities=caps, **kwargs)


_MODELS = [
    _chat("local/chat", "Plain text chat."),
    _chat("local/tools", "Text chat with function calling.", extra=TOOL_PARAMS),
    _chat(
        "local/reasoner",
        "Reasoning model: thinking mode with a thinking budget; streams reasoning_content before content.",
        extra=TOOL_PARAMS | {"enable_thinking", "thinking_budget"},
        context_window=65536,
        max_output=16384,
    ),
    _chat(
        "local/reasoner-effort",
        "The one model with reasoning_effort (high or max).",
        extra=TOOL_PARAMS | {"enable_thinking", "reasoning_effort"},
        context_window=131072,
        max_output=32768,
    ),
    _chat("local/minp", "The min_p family.", extra={"min_p"}),
    _chat("local/vision", "Multimodal: describes images.", inputs=("text", "image"), variant="multimodal"),
    _chat(
        "local/omni",
        "Multimodal: images, audio and video.",
        inputs=("text", "image", "audio", "video"),
        variant="multimodal",
    ),
    _chat(
        "local/ocr",
        "OCR: extracts the text of a PDF (or describes an image) sent through image_url; no detail.",
        inputs=("text", "image", "pdf"),
        variant="multimodal",
        pdf=True,
        detail=False,
    ),
    _chat(
        "local/vision-b64",
        "Multimodal: accepts base64 image data only, no URLs.",
        inputs=("text", "image"),
        variant="multimodal",
        base64_images_only=True,
    ),
    _chat("local/verified", "Needs real-name verification: answers 403.", needs_verification=True),
    LocalModel(
        id="local/reranker",
        kind="rerank",
        description="BM25 reranker (k1 1.2, b 0.75) with chunking of long documents.",
        capabilities={"params": ["top_n", "return_documents", "max_chunks_per_doc", "overlap_tokens"]},
        context_window=8192,
        max_output=0,
    ),
    LocalModel(
        id="local/reranker-instruct",
        kind="rerank",
        description="BM25 reranker (k1 1.6, b 0.5) steered by an instruction: query terms it names count double.",
        capabilities={"params": ["top_n", "return_documents", "max_chunks_per_doc", "overlap_tokens", "instruction"]},
        context_window=8192,
        max_output=0,
    ),
    LocalModel(
        id="local/reranker-lite",
        kind="rerank",
        description="Fast reranker: reads the first 64 tokens of each document, counts each term once.",
        capabilities={"params": ["top_n", "return_documents"]},
        context_window=8192,
        max_output=0,
    ),
    LocalModel(
        id="local/tts",
        kind="speech",
        description="Two-speaker dialogue speech synthesis (espeak-ng).",
        capabilities={
            "params": [
                "input",
                "max_tokens",
                "references",
                "voice",
                "response_format",
                "sample_rate",
                "stream",
                "speed",
                "gain",
            ]
        },
        context_window=32768,
        max_output=2048,
    ),
]

MODELS: dict[str, LocalModel] = {model.id: model for model in _MODELS}


def get_model(model_id) -> LocalModel | None:
    return MODELS.get(model_id) if isinstance(model_id, str) else None
