"""The one token counter of the local API.

A regex approximation (tiktoken cannot be used offline): one token per CJK character, per run of up to
eight letters, per run of up to three digits, and per other non-space character. Whitespace is glued to the
token that follows it, so `split_tokens(text)` joins back to `text` exactly.
"""

import re

_CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
_PIECE = re.compile(rf"\s*(?:{_CJK}|(?:(?!{_CJK})[^\W\d_]){{1,8}}|\d{{1,3}}|\S)|\s+", re.UNICODE)


def split_tokens(text: str) -> list[str]:
    """Pieces of `text` (each with its leading whitespace) that concatenate back to it."""
    return _PIECE.findall(text or "")


def count_tokens(text: str) -> int:
    return sum(1 for piece in split_tokens(text) if not piece.isspace())
