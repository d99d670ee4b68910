"""Fetching a file by address on a user's behalf (the local API's media parts), through the outbound guard.

Every hop is checked before it is connected to (`guard.check_url`) and connected through the guard's pinned
transport, so a redirect to a refused host and DNS rebinding are refused alike. Bounded everywhere: connect,
read and total timeouts, a number of redirects, and a size at which reading stops. Compressed responses are
refused rather than inflated (a small gzip body can expand a thousandfold).
"""

import asyncio
from dataclasses import dataclass

import httpx

from playground.lib import guard

REDIRECTS = (301, 302, 303, 307, 308)


class FetchError(Exception):
    """The address was refused or could not be fetched; the message says why, in words."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    total_timeout: float = 30.0
    max_redirects: int = 3


@dataclass(frozen=True)
class Fetched:
    url: str
    content_type: str
    data: bytes


def _content_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def _refused(exc: guard.Refused) -> FetchError:
    if exc.kind == "network":
        return FetchError(f"cannot reach it ({exc.message})")
    return FetchError(f"address not allowed ({exc.message})")


async def _check(url: str) -> None:
    try:
        await guard.check_url(url)
    except guard.Refused as exc:
        raise _refused(exc) from None


async def _body(response: httpx.Response, limits: Limits) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes:
        raise FetchError(f"the file is larger than the limit of {limits.max_bytes // (1024 * 1024)} MB")
    chunks, size = [], 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > limits.max_bytes:
            raise FetchError(
                f"the file is larger than the limit of {limits.max_bytes // (1024 * 1024)} MB (stopped reading there)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def _follow(client: httpx.AsyncClient, url: str, accept: tuple[str, ...], limits: Limits) -> Fetched:
    for _ in range(limits.max_redirects + 1):
        await _check(url)
        headers = {"Accept": ", ".join(f"{kind}*" if kind.endswith("/") else kind for kind in accept)}
        async with client.stream("GET", url, headers={**headers, "Accept-Encoding": "identity"}) as response:
            if response.status_code in REDIRECTS:
                location = response.headers.get("location")
                if not location:
                    raise FetchError(f"the server redirected (HTTP {response.status_code}) without a location")
                url = str(response.url.join(location))
                continue
            if response.status_code != 200:
                raise FetchError(f"the server answered HTTP {response.status_code}")
            if response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
                raise FetchError("the server sent a compressed body (only uncompressed files are accepted)")
            content_type = _content_type(response)
            if not content_type.startswith(accept):
                wanted = ", ".join(f"{kind}*" if kind.endswith("/") else kind for kind in accept)
                raise FetchError(f"the content type is {content_type or 'missing'}, not {wanted}")
            return Fetched(url=url, content_type=content_type, data=await _body(response, limits))
    raise FetchError(f"more than {limits.max_redirects} redirects")


async def fetch(url: str, *, accept: tuple[str, ...], limits: Limits) -> Fetched:
    """GET `url` (http or https) whose content type starts with one of `accept` (`"image/"`, `"application/pdf"`).

    Raises FetchError, in words, for a refused address, a redirect to one, a timeout, a failed connection, an
    error status, another content type or a body over `limits.max_bytes`.
    """
    timeout = httpx.Timeout(limits.read_timeout, connect=limits.connect_timeout)
    try:
        async with asyncio.timeout(limits.total_timeout):
            async with httpx.AsyncClient(
                transport=guard.pinned_transport(), timeout=timeout, follow_redirects=False
            ) as client:
                return await _follow(client, url, accept, limits)
    except guard.Refused as exc:
        raise _refused(exc) from None
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchError(f"not a valid address ({exc})") from None
    except TimeoutError:
        raise FetchError(f"no complete answer within {limits.total_timeout:g} s") from None
    except httpx.TimeoutException:
        raise FetchError(
            f"the server did not answer in time (connect {limits.connect_timeout:g} s, read {limits.read_timeout:g} s)"
        ) from None
    except httpx.HTTPError as exc:
        raise FetchError(f"cannot fetch it ({exc or type(exc).__name__})") from None
