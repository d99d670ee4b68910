"""An independent OpenID Connect provider for the test suite (discovery, JWKS, authorize, token, userinfo).

It shares no code with the playground: ID tokens are made with joserfc (the playground verifies with PyJWT through
mozilla-django-oidc). It signs in `FakeIdP.person` without asking (an IdP session already open: one click at the
playground is the whole sign-in), checks what a real provider checks at the token endpoint (the client's id and
secret, the code once, the redirect URI, the PKCE verifier for S256), and can be told to misbehave through
`FakeIdP.tamper` for the negative tests: "issuer", "audience", "expired", "signature" (signed by a key the JWKS does
not hold, under the same kid), "nonce", "unknown-kid" (a kid the JWKS does not hold), "no-kid" (a header without
kid: allowed of a provider with one key) and "no-kid-two-keys" (the same, with two keys in the JWKS).
"""

import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

from joserfc import jwt
from joserfc.jwk import RSAKey

from tests.serving import thread_for

CLIENT_ID = "playground-test"
CLIENT_SECRET = "fake-idp-secret-0123456789"
KID = "fake-idp-key-1"


@dataclass
class Person:
    sub: str
    email: str
    groups: list[str]
    name: str = ""
    preferred_username: str = ""
    email_verified: bool = True


@dataclass
class FakeIdP:
    url: str = ""
    person: Person | None = None
    tamper: str = ""  # see the module's docstring
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": KID}))
    other_key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": KID}))
    codes: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    token_requests: list = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def issuer(self) -> str:
        return self.url

    def discovery(self) -> dict:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "userinfo_endpoint": f"{self.url}/userinfo",
            "jwks_uri": f"{self.url}/jwks",
            "end_session_endpoint": f"{self.url}/logout",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "email", "profile", "groups"],
        }

    def claims(self, person: Person) -> dict:
        return {
            "sub": person.sub,
            "email": person.email,
            "email_verified": person.email_verified,
            "name": person.name or person.sub,
            "preferred_username": person.preferred_username or person.email.partition("@")[0],
            "groups": list(person.groups),
        }

    def id_token(self, person: Person, nonce: str | None) -> str:
        now = int(time.time())
        claims = {
            **self.claims(person),
            "iss": "http://evil.example" if self.tamper == "issuer" else self.issuer,
            "aud": "another-client" if self.tamper == "audience" else CLIENT_ID,
            "iat": now - 600 if self.tamper == "expired" else now,
            "exp": now - 300 if self.tamper == "expired" else now + 300,
        }
        if nonce:
            claims["nonce"] = "not-the-nonce" if self.tamper == "nonce" else nonce
        key = self.other_key if self.tamper == "signature" else self.key
        header = {"alg": "RS256", "kid": "fake-idp-key-9" if self.tamper == "unknown-kid" else KID}
        if self.tamper.startswith("no-kid"):
            del header["kid"]
        return jwt.encode(header, claims, key)

    def jwks(self) -> dict:
        keys = [self.key.as_dict(private=False) | {"alg": "RS256", "use": "sig"}]
        if self.tamper == "no-kid-two-keys":
            keys.append(self.other_key.as_dict(private=False) | {"alg": "RS256", "use": "sig", "kid": "fake-idp-key-2"})
        return {"keys": keys}


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def handler_for(idp: FakeIdP):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _json(self, body: dict, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                return self._json(idp.discovery())
            if url.path == "/jwks":
                return self._json(idp.jwks())
            if url.path == "/authorize":
                return self._authorize(query)
            if url.path == "/userinfo":
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                person = idp.tokens.get(token)
                if person is None:
                    return self._json({"error": "invalid_token"}, 401)
                return self._json(idp.claims(person))
            if url.path == "/logout":
                return self._redirect(query.get("post_logout_redirect_uri") or idp.url)
            return self._json({"error": "not_found"}, 404)

        def _authorize(self, query: dict) -> None:
            if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
                return self._json({"error": "invalid_request"}, 400)
            if "openid" not in query.get("scope", "").split() or query.get("code_challenge_method") != "S256":
                return self._json({"error": "invalid_request", "error_description": "openid and S256 PKCE"}, 400)
            if idp.person is None:
                location = query["redirect_uri"] + "?" + urlencode({"error": "access_denied", "state": query["state"]})
                return self._redirect(location)
            code = secrets.token_urlsafe(16)
            idp.codes[code] = {
                "person": idp.person,
                "redirect_uri": query["redirect_uri"],
                "nonce": query.get("nonce"),
                "challenge": query.get("code_challenge"),
            }
            self._redirect(query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]}))

        def do_POST(self):
            if urlparse(self.path).path != "/token":
                return self._json({"error": "not_found"}, 404)
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            idp.token_requests.append(form)
            if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
                return self._json({"error": "invalid_client"}, 401)
            grant = idp.codes.pop(form.get("code", ""), None)  # a code works once
            if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
                return self._json({"error": "invalid_grant"}, 400)
            if _challenge(form.get("code_verifier", "")) != grant["challenge"]:
                return self._json({"error": "invalid_grant", "error_description": "PKCE verifier"}, 400)
            access = secrets.token_urlsafe(24)
            idp.tokens[access] = grant["person"]
            id_token = idp.id_token(grant["person"], grant["nonce"])
            return self._json({"access_token": access, "token_type": "Bearer", "expires_in": 300, "id_token": id_token})

    return Handler


def start(port: int) -> FakeIdP:
    idp = FakeIdP(url=f"http://127.0.0.1:{port}")
    idp.server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(idp))
    thread_for(idp.server).start()
    return idp


def stop(idp: FakeIdP) -> None:
    idp.server.shutdown()
    idp.server.server_close()
