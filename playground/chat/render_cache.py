"""Rendered markdown of finished messages, remembered per process (a long conversation opens without rendering
its answers again). Keyed by the text itself, so an edited or regenerated message is simply a new entry; bounded
by the characters it holds (least recently used out first)."""

from collections import OrderedDict
from threading import Lock

from playground.chat.rendering import render_markdown

BUDGET = 8_000_000  # characters of source and HTML held, all entries together
LARGEST = 200_000  # longer texts are rendered each time (they would crowd out everything else)

_entries: OrderedDict[str, str] = OrderedDict()
_size = 0
_lock = Lock()


def rendered(text: str) -> str:
    global _size
    if not text or len(text) > LARGEST:
        return render_markdown(text)
    with _lock:
        html = _entries.get(text)
        if html is not None:
            _entries.move_to_end(text)
            return html
    html = render_markdown(text)
    with _lock:
        if text not in _entries:
            _entries[text] = html
            _size += len(text) + len(html)
            while _size > BUDGET and _entries:
                old, old_html = _entries.popitem(last=False)
                _size -= len(old) + len(old_html)
    return html
