"""Keep a connection's key out of what a provider says back: some echo it (or part of it) in an error message."""

import re

FRAGMENT = 8  # a run of this many characters of the key is treated as the key
REDACTED = "[redacted key]"
TOKEN = re.compile(r"[A-Za-z0-9_\-+/~]+")


def sent_key(response) -> str:
    """The API key the request behind `response` carried (its bearer token), or ""."""
    try:
        header = response.request.headers.get("authorization", "")
    except (AttributeError, RuntimeError):  # a response built without its request
        return ""
    return header.removeprefix("Bearer ").strip()


def redact_key(text: str, key: str) -> str:
    """`text` with the key and every word holding FRAGMENT or more characters of it replaced by REDACTED."""
    if not text or len(key) < FRAGMENT:
        return text
    text = text.replace(key, REDACTED)
    pieces = {key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)}

    def hide(match: re.Match) -> str:
        word = match.group(0)
        if any(word[i : i + FRAGMENT] in pieces for i in range(len(word) - FRAGMENT + 1)):
            return REDACTED
        return word

    return TOKEN.sub(hide, text)


def redact_response_error(text: str, response) -> str:
    """An error text of `response` without the key its request was sent with."""
    return redact_key(text, sent_key(response))
