"""What the local model is given and what it answers, as plain dataclasses."""

from dataclasses import dataclass, field

from playground.localapi.engines.generator.script import Script


@dataclass
class Media:
    """A decoded input part: what the bytes really are."""

    kind: str  # image | audio | video | pdf
    info: dict
    tokens: int
    summary: str  # one markdown line describing it
    text: str = ""  # extracted text (pdf)


@dataclass
class Message:
    role: str
    text: str
    media: list[Media] = field(default_factory=list)
    tool_calls: list[dict] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass
class Request:
    model: str
    messages: list[Message]
    tools: list[dict] = field(default_factory=list)  # function objects {name, description, parameters}
    tool_choice: object = "auto"
    seed: int | None = None
    temperature: float = 0.7
    top_p: float = 0.7
    top_k: float = 50
    min_p: float = 0.0
    frequency_penalty: float = 0.0
    thinking: bool = False
    thinking_budget: int = 4096
    reasoning_effort: str | None = None
    json_mode: bool = False
    script: Script = field(default_factory=Script)  # what a test stated the model will say


@dataclass
class Answer:
    content: str
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)  # {id, type, function: {name, arguments}}
    chunks: int | None = None  # stream the text in this many chunks instead of one token per chunk
