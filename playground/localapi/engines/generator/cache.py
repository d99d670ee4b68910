"""Which message prefixes each key sent before, for `cached_tokens` in usage."""


class PromptCache:
    """Remembers message prefixes per key, to report `cached_tokens` for a prefix seen before."""

    def __init__(self, per_owner: int = 512):
        self.per_owner = per_owner
        self.seen: dict[str, dict[str, int]] = {}

    def lookup_and_store(self, owner: str, prefixes: list[tuple[str, int]]) -> int:
        """`prefixes` are (hash of the first k messages, their tokens); returns the longest cached one's tokens."""
        known = self.seen.setdefault(owner, {})
        cached = max((tokens for digest, tokens in prefixes if digest in known), default=0)
        for digest, tokens in prefixes:
            known.pop(digest, None)
            known[digest] = tokens
        while len(known) > self.per_owner:
            known.pop(next(iter(known)))
        return cached
