"""Relevance scoring for /rerank: BM25 over chunks of the documents.

- Documents are split into chunks of `CHUNK_TOKENS` (128) tokens of `tokens.split_tokens`, adjacent chunks
  sharing `overlap` tokens; at most `max_chunks` chunks per document are scored (the rest is ignored).
  Models without chunking score each document as one chunk cut at `LITE_MAX_TOKENS` (512) tokens, as a
  fixed-length cross-encoder would.
- Each chunk is scored with BM25 (k1 1.2, b 0.75) and Lucene's idf `log(1 + (N - n + 0.5) / (n + 0.5))`,
  which never goes negative on small sets (rank-bm25's idf does); N counts the chunks of all documents.
- A document scores its best chunk. `relevance_score = 1 / (1 + exp(-(bm25 - 4) / 2))`: a logistic that maps
  no match to about 0.12 and a strong match towards 1, kept inside (0, 1). Ties keep the input order.
"""

import math
import re
from collections import Counter
from dataclasses import dataclass

from playground.localapi.tokens import count_tokens, split_tokens

CHUNK_TOKENS = 128
LITE_MAX_TOKENS = 512
K1 = 1.2
B = 0.75
_TERM = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Scored:
    index: int
    score: float  # raw BM25 of the best chunk
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


def score(
    query: str,
    documents: list[str],
    *,
    instruction: str | None = None,
    chunking: bool = True,
    max_chunks: int = 1024,
    overlap: int = 0,
) -> list[Scored]:
    """Every document scored against the query (plus the instruction's terms), best first, stable by index."""
    query_terms = Counter(terms(query) + (terms(instruction) if instruction else []))
    wanted = set(query_terms)
    # (document index, chunk length, counts of the query terms in the chunk)
    rows: list[tuple[int, int, Counter]] = []
    for index, document in enumerate(documents):
        if chunking:
            parts = chunks(document, overlap=overlap, max_chunks=max_chunks)
        else:
            parts = chunks(document, size=LITE_MAX_TOKENS, max_chunks=1)
        for part in parts:
            words = terms(part)
            rows.append((index, len(words), Counter(w for w in words if w in wanted)))
    total = len(rows)
    average = (sum(length for _, length, _ in rows) / total) if total else 0.0
    frequency = Counter(term for _, _, counts in rows for term in counts)
    idf = {term: math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5)) for term in wanted}

    best = [0.0] * len(documents)
    for index, length, counts in rows:
        norm = K1 * (1 - B + B * (length / average if average else 0.0))
        value = sum(query_terms[t] * idf[t] * tf * (K1 + 1) / (tf + norm) for t, tf in counts.items())
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
    chunking: bool
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
        chunking=model.supports("max_chunks_per_doc"),
        max_chunks=1024 if max_chunks is None else max_chunks,
        overlap=overlap or 0,
    )


def respond(request: RerankRequest) -> dict:
    """The response body without its id: results (best first, cut at top_n) and meta (CPU-heavy: a thread)."""
    ranked = score(
        request.query,
        request.documents,
        instruction=request.instruction,
        chunking=request.chunking,
        max_chunks=request.max_chunks,
        overlap=min(request.overlap, CHUNK_TOKENS - 1),
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
