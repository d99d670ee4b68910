"""The chat page's scripts and styles as one file each, built from the sources in static/ (issue 24).

The page used to ask for two dozen files; over HTTP/1.1's six connections a fresh browser waited for four rounds of
them before its deferred scripts could run. A bundle is the plain concatenation of its sources in the order the
page loaded them, each headed by its path (every script is an IIFE in strict mode, so joining them changes nothing;
no stylesheet has an @import or a relative url()). The sources stay the files to read and edit.

A staticfiles finder builds them, so everything that collects or serves static files gets the same bundles:
`collectstatic` (`make run`, the Procfile's release) copies them into STATIC_ROOT beside their gzip copies, and
WhiteNoise's finders serve them while the collected files are not current (the tests, a source changed since);
`find` rebuilds a bundle whose sources changed (DEBUG's autorefresh asks it on every request).
"""

import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.files.storage import FileSystemStorage

CHAT_SCRIPTS = [
    "messages",
    "attachments",
    "panel",
    "tools",
    "composer",
    "markdown",
    "choices",
    "final",
    "articles",  # the articles the page builds itself (uses final.js)
    "paint",  # stream.js's DOM writes
    "reconnect",
    "announce",
    "start",
    "branches",
    "socket",  # the websocket: stream.js registers its callbacks with it as it starts
    "stream",  # last: it announces the articles already on the page to the behaviours above as it starts
]

BUNDLES = {
    "bundles/chat.css": [
        "css/app.css",
        "css/chat.css",
        "css/highlight.css",
        "css/chat-tools.css",
        "css/branches.css",
        "css/presenter.css",
    ],
    "bundles/chat.js": [
        "vendor/htmx-2.0.min.js",
        "js/app.js",
        "js/presenter.js",
        *(f"js/chat/{name}.js" for name in CHAT_SCRIPTS),
    ],
}


def source(name: str) -> Path:
    found = next((path for finder in _source_finders() if (path := finder.find(name))), None)
    if not found:
        raise FileNotFoundError(f"{name}, a part of a bundle, is in no static folder")
    return Path(found)


def _source_finders():
    return [finder for finder in finders.get_finders() if not isinstance(finder, BundleFinder)]


def content(name: str) -> bytes:
    """The bundle `name` as its sources make it now."""
    # A script's last line may be a // comment or lack its semicolon; a stray ";" in a stylesheet would drop the
    # rule after it.
    separator = b"\n;\n" if name.endswith(".js") else b"\n"
    parts = [b"/* %s */\n%s" % (part.encode(), source(part).read_bytes().rstrip()) for part in BUNDLES[name]]
    return separator.join(parts) + b"\n"


def build(name: str, root: Path) -> Path:
    """Writes the bundle under `root` when it is missing or differs from its sources (atomically: test workers and
    server processes may build at once)."""
    path = root / name
    data = content(name)
    try:
        if path.read_bytes() == data:
            return path
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".build-")
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
    return path


class BundleFinder(finders.BaseFinder):
    """Finds the bundles, built into settings.BUNDLE_ROOT from the files the other finders find."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.root = Path(settings.BUNDLE_ROOT)
        self.storage = FileSystemStorage(location=self.root)

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path not in BUNDLES:
            return []
        built = str(build(path, self.root))
        return [built] if find_all or kwargs.get("all") else built

    def list(self, ignore_patterns):
        for name in BUNDLES:
            build(name, self.root)
            yield name, self.storage
