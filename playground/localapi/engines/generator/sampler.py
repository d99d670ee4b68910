"""Deterministic choices among wordings, driven by the request's sampling parameters."""

import hashlib
import json
import math
import random

from playground.localapi.engines.generator.shapes import Request


class Sampler:
    """Choices among wordings, seeded from the whole request so identical inputs give identical answers."""

    def __init__(self, request: Request, index: int, salt: str = ""):
        self.request = request
        material = json.dumps(
            [
                request.model,
                [(m.role, m.text, [x.summary for x in m.media]) for m in request.messages],
                request.seed,
                request.temperature,
                request.top_p,
                request.top_k,
                request.min_p,
                index,
                salt,
            ],
            default=str,
        )
        self.rng = random.Random(hashlib.sha256(material.encode()).digest())
        self.used: set[str] = set()

    def pick(self, options: list[str]) -> str:
        r = self.request
        if r.temperature == 0:
            pool = options[:1]
        else:
            size = len(options) * r.top_p * (1 - r.min_p) * min(1.0, 0.5 + r.temperature / 2)
            pool = options[: max(1, min(int(r.top_k) or len(options), math.ceil(size)))]
        if r.frequency_penalty > 0:
            fresh = [o for o in pool if o not in self.used] or [o for o in options if o not in self.used]
            pool = fresh or pool
        choice = pool[self.rng.randrange(len(pool))]
        self.used.add(choice)
        return choice
