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
