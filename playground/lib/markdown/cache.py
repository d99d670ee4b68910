"""Rendered markdown remembered per process, keyed by the text itself and bounded by the characters it holds
(least recently used out first); `Lru` serves other caches of rendered HTML too."""

from collections import OrderedDict
from threading import Lock

from playground.lib.markdown.rendering import render_markdown

LARGEST = 200_000  # longer texts are rendered each time (they would crowd out everything else)


class Lru:
    def __init__(self, budget: int):
        self.budget = budget  # characters of keys and HTML held, all entries together
        self._entries: OrderedDict[str | bytes, str] = OrderedDict()
        self._size = 0
        self._lock = Lock()

    def get(self, key):
        with self._lock:
            html = self._entries.get(key)
            if html is not None:
                self._entries.move_to_end(key)
            return html

    def put(self, key, html: str) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = html
            self._size += len(key) + len(html)
            while self._size > self.budget and self._entries:
                old, old_html = self._entries.popitem(last=False)
                self._size -= len(old) + len(old_html)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0


_markdown = Lru(8_000_000)


def rendered(text: str) -> str:
    if not text or len(text) > LARGEST:
        return render_markdown(text)
    html = _markdown.get(text)
    if html is None:
        html = render_markdown(text)
        _markdown.put(text, html)
    return html
