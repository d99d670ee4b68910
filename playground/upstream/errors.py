"""The one error type of the upstream client, and what it means for the person at the keyboard."""

import re
from dataclasses import dataclass

LIMIT_TYPES = ("RPM", "RPD", "TPM", "TPD", "IPM", "IPD")
LIMIT_NAMES = {
    "RPM": "requests per minute",
    "RPD": "requests per day",
    "TPM": "tokens per minute",
    "TPD": "tokens per day",
    "IPM": "images per minute",
    "IPD": "images per day",
}


@dataclass
class UpstreamError(Exception):
    """A failed call to a provider.

    kind is "http" (the provider answered with an error status), "network" (it could not be reached),
    "timeout", "stream" (a stream broke or sent something unreadable) or "blocked" (the address is not allowed).
    """

    kind: str
    message: str
    status: int | None = None
    code: int | None = None
    data: object = None
    limit_type: str | None = None
    retry_after: float | None = None
    trace_id: str = ""

    def __str__(self) -> str:
        return f"{self.title}: {self.message}"

    @property
    def retryable(self) -> bool:
        return self.kind in {"network", "timeout", "stream"} or (self.status or 0) in {429, 500, 502, 503, 504}

    @property
    def title(self) -> str:
        if self.kind == "network":
            return "Cannot reach the provider"
        if self.kind == "timeout":
            return "The provider did not answer in time"
        if self.kind == "stream":
            return "The stream was cut off"
        if self.kind == "blocked":
            return "Address not allowed"
        if 300 <= (self.status or 0) < 400:
            return "The provider redirected the request"
        return {
            400: "The provider rejected the request",
            401: "API key rejected",
            402: "Account in arrears",
            403: "Permission denied",
            404: "Not found at the provider",
            429: "Rate limit reached" + (f" ({self.limit_type})" if self.limit_type else ""),
            500: "The provider had an internal error",
            503: "The model is overloaded",
            504: "The provider timed out",
        }.get(self.status or 0, f"The provider answered {self.status}")

    @property
    def next_step(self) -> str:
        if self.kind == "network":
            return "Check the connection's base URL and that the provider is up, then retry."
        if self.kind == "timeout":
            return "Retry; for long answers turn streaming on."
        if self.kind == "stream":
            return "What arrived is kept. Retry to generate the answer again."
        if self.kind == "blocked":
            return "Use a public provider address, or ask an administrator to allow this host."
        status = self.status or 0
        if 300 <= status < 400:
            return "Check the connection's base URL (scheme, host and path ending in /v1), then retry."
        if status == 429:
            limit = LIMIT_NAMES.get(self.limit_type or "", "a rate limit")
            wait = f" in {round(self.retry_after)} s" if self.retry_after else " later"
            return f"You hit the limit on {limit}. Retry{wait}."
        return {
            400: "Adjust the parameter the message names, then send again.",
            401: "Check the API key of this connection in Connections.",
            402: "Recharge the account with the provider, then retry.",
            403: "This model may need real-name verification or a permission your account lacks.",
            404: "Check the connection's base URL (it should end in /v1) and the model id.",
            500: "Retry; if it persists, note the trace id for the provider's support.",
            503: "Retry in a moment; streaming is advised when the model is overloaded.",
            504: "Retry; streaming is advised for long requests.",
        }.get(status, "Retry, or check the connection.")

    def as_dict(self) -> dict:
        """What may be shown to the user (it never contains the key)."""
        return {
            "kind": self.kind,
            "status": self.status,
            "code": self.code,
            "title": self.title,
            "message": self.message,
            "next_step": self.next_step,
            "limit_type": self.limit_type,
            "retry_after": self.retry_after,
            "retryable": self.retryable,
            "trace_id": self.trace_id,
        }


def limit_type_in(text: str) -> str | None:
    match = re.search(r"\b(" + "|".join(LIMIT_TYPES) + r")\b", text or "")
    return match.group(1) if match else None
