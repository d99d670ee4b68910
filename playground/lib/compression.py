"""gzip for whole HTML responses (issue 24): the chat page's 40-55 KB of markup goes out as about a sixth of it.

Django's GZipMiddleware, with its BREACH mitigation (since 4.2: random bytes in the gzip header make the length
useless to an attacker; the CSRF token is masked anew in each response as well). Only HTML: a stream (the local
API's server-sent events, speech audio, a download) goes out as it is made, as before, and static files come
with their own gzip copies (WhiteNoise).
"""

from django.middleware.gzip import GZipMiddleware


class HtmlGZipMiddleware(GZipMiddleware):
    def process_response(self, request, response):
        if response.streaming or not response.get("Content-Type", "").startswith("text/html"):
            return response
        return super().process_response(request, response)
