"""Relevance scoring for /rerank: three lexical rerankers that score differently, so an A/B shows it.

- `local/reranker`: BM25 (k1 1.2, b 0.75) over chunks of `CHUNK_TOKENS` (128) tokens of `tokens.split_tokens`,
  adjacent chunks sharing `overlap` tokens, at most `max_chunks` chunks per document; a document scores its
  best chunk.
- `local/reranker-instruct`: BM25 with k1 1.6, b 0.5 (more weight to repeated terms, less length penalty),
  same chunking. Query terms that also appear in the `instruction` count double; the instruction's other
  terms count half, so the instruction steers the ranking without replacing the query.
- `local/reranker-lite`: no chunking; only the first `LITE_PREFIX_TOKENS` (64) tokens of a document are read,
  as a short fixed-length model would, and a term counts once however often it appears (binary tf, no length
  normalisation).

All use Lucene's idf `log(1 + (N - n + 0.5) / (n + 0.5))`, which never goes negative on small sets (rank-bm25's
idf does); N counts the chunks of all documents. `relevance_score = 1 / (1 + exp(-(raw - 4) / 2))`: no match
maps to about 0.12 and a strong match towards 1, kept inside (0, 1). Ties keep the input order.
"""

import math
import re
from collections import Counter
from dataclasses import dataclass

from playground.localapi.tokens import count_tokens, split_tokens

CHUNK_TOKENS = 128
LITE_PREFIX_TOKENS = 64
_TERM = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Profile:
    k1: float = 1.2
    b: float = 0.75
    prefix_tokens: int | None = None  # read only this many tokens of a document (no chunking)
    binary_tf: bool = False
    instruction_weight: float = 1.0  # weight of query terms that also appear in the instruction
    instruction_only_weight: float = 1.0  # weight of instruction terms absent from the query


PROFILES = {
    "local/reranker": Profile(),
    "local/reranker-instruct": Profile(k1=1.6, b=0.5, instruction_weight=2.0, instruction_only_weight=0.5),
    "local/reranker-lite": Profile(prefix_tokens=LITE_PREFIX_TOKENS, binary_tf=True),
}


@dataclass(frozen=True)
class Scored:
    index: int
    score: float  # raw score of the best chunk
    relevance_score: float


def terms(text: str) -> list[str]:
    return [term.lower() for term in _TERM.findall(text)]


def chunks(text: str, *, size: int = CHUNK_TOKENS, overlap: int = 0, max_chunks: int = 1024) -> list[str]:
    """The text of each chunk: `size` tokens, the next starting `size - overlap` tokens later."""
    pieces = [piece for piece in split_tokens(text) if not piece.isspace()]
    if len(pieces) <= size:
        return [text]
    step = max(1, size - overlap)
    out = []
    for start in range(0, len(pieces), step):
        out.append("".join(pieces[start : start + size]))
        if len(out) >= max_chunks or start + size >= len(pieces):
            break
    return out


def relevance(score: float) -> float:
    value = 1.0 / (1.0 + math.exp(-(score - 4.0) / 2.0))
    return min(max(value, 1e-6), 1 - 1e-6)


def query_weights(query: str, instruction: str | None, profile: Profile) -> dict[str, float]:
    weights: dict[str, float] = dict(Counter(terms(query)))
    if instruction:
        steering = set(terms(instruction))
        for term in steering:
            if term in weights:
                weights[term] *= profile.instruction_weight
            else:
                weights[term] = profile.instruction_only_weight
    return weights


def score(
    query: str,
    documents: list[str],
    *,
    instruction: str | None = None,
    max_chunks: int = 1024,
    overlap: int = 0,
    profile: Profile = PROFILES["local/reranker"],
) -> list[Scored]:
    """Every document scored against the query (and the instruction), best first, stable by index."""
    weights = query_weights(query, instruction, profile)
    # (document index, chunk length, counts of the query terms in the chunk)
    rows: list[tuple[int, int, Counter]] = []
    for index, document in enumerate(documents):
        if profile.prefix_tokens:
            parts = chunks(document, size=profile.prefix_tokens, max_chunks=1)
        else:
            parts = chunks(document, overlap=overlap, max_chunks=max_chunks)
        for part in parts:
            words = terms(part)
            rows.append((index, len(words), Counter(w for w in words if w in weights)))
    total = len(rows)
    average = (sum(length for _, length, _ in rows) / total) if total else 0.0
    frequency = Counter(term for _, _, counts in rows for term in counts)
    idf = {term: math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5)) for term in weights}

    k1, b = profile.k1, profile.b
    best = [0.0] * len(documents)
    for index, length, counts in rows:
        if profile.binary_tf:
            # A present term scores as one occurrence would under BM25 at its saturation, (k1 + 1).
            value = sum(weights[t] * idf[t] * (k1 + 1) for t in counts)
        else:
            norm = k1 * (1 - b + b * (length / average if average else 0.0))
            value = sum(weights[t] * idf[t] * tf * (k1 + 1) / (tf + norm) for t, tf in counts.items())
        best[index] = max(best[index], value)
    ranked = sorted(range(len(documents)), key=lambda i: -best[i])
    return [Scored(index=i, score=best[i], relevance_score=relevance(best[i])) for i in ranked]


# --- the request -----------------------------------------------------------------------------------

UNKNOWN_MODEL, INVALID, UNSUPPORTED = 20012, 20015, 20016


class Invalid(ValueError):
    def __init__(self, message: str, code: int = INVALID):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class RerankRequest:
    model: str
    query: str
    documents: list[str]
    instruction: str | None
    top_n: int | None
    return_documents: bool
    max_chunks: int
    overlap: int


def _integer(body: dict, name: str, low: int, high: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"{name}: must be an integer")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high} inclusive" if high is not None else f"at least {low}"
        raise Invalid(f"{name}: must be {bounds} (got {value})")
    return value


def parse(body: dict, model) -> RerankRequest:
    """The validated request; `model` is the registry entry (None when unknown).

    Rules beyond the spec (our choices): a model that is not a rerank model is "unknown" here (20012);
    top_n larger than the number of documents returns them all; documents must be strings — the multimodal
    rerank form is "not shown" in the spec and no local model implements it.
    """
    if model is None or model.kind != "rerank":
        name = body.get("model")
        if not name:
            raise Invalid("model: required")
        raise Invalid(f"model: no rerank model named {name!r} (try local/reranker)", UNKNOWN_MODEL)
    for name in ("instruction", "max_chunks_per_doc", "overlap_tokens"):
        if body.get(name) is not None and not model.supports(name):
            raise Invalid(f"{name}: not supported by model {model.id}", UNSUPPORTED)
    query = body.get("query")
    if not isinstance(query, str) or not query:
        raise Invalid("query: required, a string of at least 1 character")
    documents = body.get("documents")
    if isinstance(documents, str):
        documents = [documents]
    if not isinstance(documents, list) or not documents:
        raise Invalid("documents: required, a string or an array of at least 1 string")
    for position, document in enumerate(documents):
        if not isinstance(document, str):
            raise Invalid(
                f"documents[{position}]: must be a string (the multimodal rerank form with image or video "
                "documents is not supported by the local rerank models)"
            )
    instruction = body.get("instruction")
    if instruction is not None and (not isinstance(instruction, str) or not instruction):
        raise Invalid("instruction: must be a string of at least 1 character")
    return_documents = body.get("return_documents", False)
    if return_documents is None:
        return_documents = False
    if not isinstance(return_documents, bool):
        raise Invalid("return_documents: must be a boolean")
    max_chunks = _integer(body, "max_chunks_per_doc", 1)
    overlap = _integer(body, "overlap_tokens", 0, 80)
    return RerankRequest(
        model=model.id,
        query=query,
        documents=documents,
        instruction=instruction,
        top_n=_integer(body, "top_n", 1),
        return_documents=return_documents,
        max_chunks=1024 if max_chunks is None else max_chunks,
        overlap=overlap or 0,
    )


def respond(request: RerankRequest) -> dict:
    """The response body without its id: results (best first, cut at top_n) and meta (CPU-heavy: a thread)."""
    ranked = score(
        request.query,
        request.documents,
        instruction=request.instruction,
        max_chunks=request.max_chunks,
        overlap=min(request.overlap, CHUNK_TOKENS - 1),
        profile=PROFILES.get(request.model, PROFILES["local/reranker"]),
    )
    if request.top_n is not None:
        ranked = ranked[: request.top_n]
    results = []
    for item in ranked:
        result = {"index": item.index, "relevance_score": item.relevance_score}
        if request.return_documents:
            result["document"] = {"text": request.documents[item.index]}
        results.append(result)
    tokens = count_tokens(request.query) + count_tokens(request.instruction or "")
    tokens += sum(count_tokens(document) for document in request.documents)
    return {
        "results": results,
        "meta": {
            "tokens": {"input_tokens": tokens, "output_tokens": 0, "image_tokens": 0},
            "billed_units": {
                "input_tokens": tokens,
                "output_tokens": 0,
                "image_tokens": 0,
                "search_units": 1,
                "classifications": 0,
            },
        },
    }
