"""The base of the tests' stand-in speech providers: quiet, HTTP/1.1, and an empty custom voice list."""

from http.server import BaseHTTPRequestHandler


class SpeechProvider(BaseHTTPRequestHandler):
    """Subclasses answer POST /audio/speech; GET (the voice list) has no custom voices."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b'{"results": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


MOSS = "fnlp/MOSS-TTSD-v0.5"  # a stand-in provider's one model (it has no model list: tests add it by hand)


def moss_clip_form(connection) -> dict:
    """The speech page's form for a streamed two-speaker clip from `connection`'s MOSS model."""
    return {
        "connection": connection.pk,
        "model": MOSS,
        "input": "[S1] Hello there. [S2] Hello back.",
        "voice": f"{MOSS}:alex",
        "response_format": "mp3",
        "sample_rate": "44100",
        "speed": "1",
        "gain": "0",
        "stream": "on",
    }
