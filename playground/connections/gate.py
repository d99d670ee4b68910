"""The gate: the one door to a provider key. Opening a connection for a user and a purpose *is* the check.

`open()` / `aopen()` decide, inside one transaction that locks the team's row (a team connection), or with an
atomic count of its slots (a personal one, slots.py: in this process, or in Redis when REDIS_URL is set), whether
`user` may send a request through `connection` now: the connection still exists, is not revoked and its key was
saved for the host it now points at; the user owns it or is still a member of its team; the member's and the team's
monthly token budgets have something left; one of the connection's concurrency slots is free. Only then is the key
decrypted, into the Endpoint of a `Pass` that holds a lease (the slot, and the tokens reserved against the
budgets). Whoever opened it ends it once: `settle()` files the provider's own usage (stop, error and interruption
included) in the ledger under the pass's purpose, whatever the purpose, `release()` gives the reservation back when
nothing was spent. A lease whose process died
stops counting when its heartbeat goes stale (lib/detached.py): a team's lease is a row, a personal connection's an
entry of slots.py.

The tables it reads and writes are its own (connections.models: Team, Membership, Lease, and the ledger's
UsageRecord, which ledger.py files and sums), so no foreign key, import or lookup by name points up to the teams
app, and no feature needs to import it.

The rule a budget keeps: a request is admitted while the member's (and the team's) settled usage plus the tokens
reserved by requests in flight is below the budget, and it then reserves its own estimate. So a request in flight
may take the budget past its limit by at most its own size, and never two requests on the last token.
"""

import asyncio
import json
import logging
from contextlib import asynccontextmanager

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from playground.connections import crypto, slots
from playground.connections.ledger import PURPOSE_LENGTH, live_leases, record, resets, tokens_this_month
from playground.connections.models import Connection, Lease, Membership, Team, origin_of
from playground.lib import detached, metrics
from playground.lib.prepared import Prepared
from playground.upstream.client import Endpoint
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)

KIND = "lease"  # leases in the background-work registry: this process stamps the heartbeat of its own
CHARS_PER_TOKEN = 4  # the prompt's size in tokens, estimated from its JSON (the reservation, not the bill)
SLOT_POLL = 0.25  # seconds between two looks for a free slot


TEAM_REASONS = ("member", "revoked", "budget", "team_budget")


class Refused(UpstreamError):
    """Nothing was sent: the gate refused the request. `reason` is one of member, revoked, deleted, host, owner,
    budget, team_budget, busy; the message says in words who, what was used, the limit, when it resets and who
    can raise it. Pages show it like any refusal of a provider."""

    def __init__(self, reason: str, message: str, *, in_use: int = 0, limit: int = 0):
        super().__init__(kind="http", status=429 if reason == "busy" else 403, message=message)
        self.reason, self.in_use, self.limit = reason, in_use, limit

    @property
    def title(self) -> str:
        if self.reason == "busy":
            return "Not sent: every slot of the connection is in use"
        return "Not sent through the team connection" if self.reason in TEAM_REASONS else "Not sent"

    @property
    def next_step(self) -> str:
        if self.reason == "busy":
            return "Retry when a request ends."
        return "Choose another connection, or ask an owner or admin of the team."

    @property
    def retryable(self) -> bool:
        return self.reason == "busy"


# ---------------------------------------------------------------- the pass


class Pass:
    """What an open gate hands out: the Endpoint (the only decrypted key) and the lease to end once."""

    def __init__(self, endpoint: Endpoint, connection: Connection, user_id, purpose: str, lease_id, tokens: int):
        self.endpoint, self.connection, self.user_id = endpoint, connection, user_id
        self.purpose, self.lease_id, self.tokens = purpose, lease_id, tokens
        self.ended = False

    def __repr__(self) -> str:
        return f"<Pass {self.purpose} lease {self.lease_id}>"

    def cancel(self) -> None:
        """The background registry's hook; a lease is ended by its holder (settle or release), not cancelled."""

    def _end(self) -> bool:
        if self.ended:
            return False
        self.ended = True
        detached.untrack(KIND, self.lease_id, self)
        return True

    def settle(self, *, usage: dict | None = None, status: str = "ok", model: str = "", **figures) -> None:
        """The request ended (however it ended): give back the reservation and file what the provider reported."""
        if not self._end():
            return
        if self.connection.team_id is None:  # a slot only: nothing is filed for a personal connection
            _give_back(self.lease_id)
            return
        with transaction.atomic():
            _give_back(self.lease_id)
            record(self.connection.pk, self.user_id, self.purpose, model=model, usage=usage, status=status, **figures)

    def release(self) -> None:
        """Nothing was sent (or nothing will be filed for it): give back the slot and the reservation."""
        if self._end():
            _give_back(self.lease_id)

    @property
    def _in_memory(self) -> bool:
        # A personal connection's slot without Redis: given back on the loop, no thread hop.
        return isinstance(self.lease_id, str) and isinstance(slots.counter(), slots.Memory)

    async def asettle(self, **kwargs) -> None:
        if self._in_memory:
            self.settle(**kwargs)
        elif not self.ended:
            await sync_to_async(self.settle)(**kwargs)

    async def arelease(self) -> None:
        if self._in_memory:
            self.release()
        elif not self.ended:
            await sync_to_async(self.release)()


# ---------------------------------------------------------------- opening


def estimate(body: dict | None) -> int:
    """Tokens to reserve for a chat-like request: its prompt (JSON characters / 4) plus its max_tokens (or the
    GATE_DEFAULT_RESERVATION when it sets none), times n."""
    if not body:
        return settings.GATE_DEFAULT_RESERVATION
    prompt = len(json.dumps(body.get("messages") or body.get("documents") or "", ensure_ascii=False))
    answer = body.get("max_completion_tokens") or body.get("max_tokens")
    answer = answer if isinstance(answer, int) and answer > 0 else settings.GATE_DEFAULT_RESERVATION
    n = body.get("n") if isinstance(body.get("n"), int) and body.get("n") > 0 else 1
    return prompt // CHARS_PER_TOKEN + answer * n


def _locked(connection: Connection) -> Connection | None:
    """A team connection read again under the team's row lock (its budget is on it), which serialises every open
    on the team."""
    team = Team.objects.select_for_update().filter(pk=connection.team_id).first()
    current = Connection.objects.filter(pk=connection.pk, team_id=connection.team_id).first()
    if current is not None:
        current.team = team
    return current


def _username(user_id) -> str:
    user = get_user_model().objects.filter(pk=user_id).first()
    return user.get_username() if user else "This user"


def _check(connection: Connection, user_id, name: str) -> None:
    """Raise Refused unless `user_id` may use `connection` now (all but its slots)."""
    team = connection.team
    if team is None:
        if connection.owner_id != user_id:
            raise Refused("member", f"The connection “{name}” is not {_username(user_id)}'s, so nothing was sent.")
    else:
        membership = Membership.objects.filter(team=team, user_id=user_id).first()
        if membership is None:
            raise Refused(
                "member",
                f"You are no longer a member of {team.name}, so its connection “{name}” cannot be used by "
                f"{_username(user_id)} and nothing was sent. Choose another connection; an owner or admin of the "
                "team can invite you again.",
            )
        if connection.revoked:
            raise Refused(
                "revoked",
                f"The team connection “{name}” of {team.name} was revoked, so nothing was sent. Choose another "
                "connection; an owner or admin of the team can add one.",
            )
        _check_budgets(team, membership, user_id)
    if not connection.is_local and connection.key_origin != origin_of(connection.base_url):
        raise Refused(
            "host",
            f"The key of “{name}” was saved for {connection.key_origin or 'another address'}, not for "
            f"{origin_of(connection.base_url)}, so it was not sent. Whoever manages the connection must enter the "
            "key again for the new address.",
        )


def _check_budgets(team, membership, user_id) -> None:
    budget = membership.monthly_token_budget
    if budget is not None:
        used = tokens_this_month(team.pk, user_id)
        if used >= budget:
            raise Refused(
                "budget",
                f"Your monthly token budget on {team.name} is used up ({used:,} of {budget:,} tokens this month "
                f"by {_username(user_id)}, requests in flight included), so nothing was sent. It resets on "
                f"{resets()}; an owner or admin of {team.name} can raise it.",
            )
    if team.monthly_token_budget is not None:
        used = tokens_this_month(team.pk)
        if used >= team.monthly_token_budget:
            raise Refused(
                "team_budget",
                f"The monthly token budget of the team {team.name} is used up ({used:,} of "
                f"{team.monthly_token_budget:,} tokens this month, all members, requests in flight included), so "
                f"nothing was sent by {_username(user_id)}. It resets on {resets()}; the owner of {team.name} can "
                "raise it.",
            )


def _endpoint(connection: Connection) -> Endpoint:
    """The only place a stored key becomes an Endpoint (after the checks of open())."""
    if connection.is_local and not connection.encrypted_key:
        connection.rotate_key()  # made while the local API was off, so no key was minted then
    return Endpoint(
        base_url=connection.url, api_key=crypto.decrypt(connection.encrypted_key), trusted=connection.is_local
    )


def open(connection: Connection, user, purpose: str, *, body: dict | None = None, tokens: int | None = None) -> Pass:
    """Check and take a slot of `connection` for `user` (a user or its pk) for one request (sync code).

    `tokens` (or an estimate from the chat-like `body`) is reserved against the budgets of a team connection.
    Raises Refused with the reason in words; nothing is decrypted unless every check passed.
    """
    user_id = getattr(user, "pk", user)
    reserve = max(1, tokens if tokens is not None else estimate(body)) if connection.team_id else 0
    refusal = None
    if connection.team_id is None:
        current, lease_id = _take_slot(connection, user_id)
    else:
        # No savepoint, and nothing raised inside: a refusal leaves the caller's transaction usable.
        with transaction.atomic(savepoint=False):
            try:
                current, lease_id = _take(connection, user_id, purpose, reserve)
            except Refused as exc:
                refusal = exc
    if refusal is not None:
        if refusal.reason in ("budget", "team_budget"):
            metrics.budget_refused(purpose)
        raise refusal
    try:
        ticket = Pass(_endpoint(current), current, user_id, purpose, lease_id, reserve)
    except BaseException:
        _give_back(lease_id)
        raise
    detached.track(KIND, lease_id, ticket)
    return ticket


def _give_back(lease_id: int | str) -> None:
    if isinstance(lease_id, str):
        slots.counter().give(lease_id)
    else:
        Lease.objects.filter(pk=lease_id).delete()


def _take(connection: Connection, user_id, purpose: str, reserve: int) -> tuple[Connection, int]:
    """A team connection's lease: a row, taken under the team's row lock (the budgets are checked with it)."""
    name = connection.name
    current = _locked(connection)
    _check(_existing(current, name), user_id, name)
    in_use = live_leases().filter(connection=current).count()
    if in_use >= current.slots:
        raise _busy(name, in_use, current.slots)
    lease = Lease.objects.create(
        connection=current, user_id=user_id, team_id=current.team_id, purpose=purpose[:PURPOSE_LENGTH], tokens=reserve
    )
    return current, lease.pk


PERSONAL = Prepared(lambda pk: Connection.objects.filter(pk=pk, team=None), pk=int)  # read at each send


def _take_slot(connection: Connection, user_id) -> tuple[Connection, str]:
    """A personal connection's lease: only a slot (no budget), counted in slots.py with no lock or row."""
    name = connection.name
    current = _existing(PERSONAL.first(pk=connection.pk), name)
    _check(current, user_id, name)
    lease_id = slots.new_id(current.pk)
    in_use = slots.counter().take(current.pk, lease_id, current.slots)
    if in_use >= 0:
        raise _busy(name, in_use, current.slots)
    return current, lease_id


def _existing(current: Connection | None, name: str) -> Connection:
    if current is None:
        raise Refused("deleted", f"The connection “{name}” was deleted, so nothing was sent.")
    return current


def _busy(name: str, in_use: int, limit: int) -> Refused:
    return Refused(
        "busy",
        f"All {limit} request slots of the connection “{name}” are in use ({in_use} of {limit}),"
        " so nothing was sent. Retry when a request ends; whoever manages the connection can raise its limit.",
        in_use=in_use,
        limit=limit,
    )


async def aopen(connection, user, purpose: str, *, body=None, tokens=None, wait: bool = False, on_wait=None) -> Pass:
    """open() from async code. With `wait`, a request that finds every slot taken waits for one (up to
    GATE_SLOT_WAIT_SECONDS), telling `on_wait(in_use, limit)` — "waiting for a free slot (3 of 4 in use)"."""
    deadline = asyncio.get_running_loop().time() + settings.GATE_SLOT_WAIT_SECONDS
    while True:
        try:
            return await sync_to_async(open)(connection, user, purpose, body=body, tokens=tokens)
        except Refused as refusal:
            if not wait or refusal.reason != "busy" or asyncio.get_running_loop().time() > deadline:
                raise
            if on_wait is not None:
                await on_wait(refusal.in_use, refusal.limit)
            await asyncio.sleep(SLOT_POLL)


@asynccontextmanager
async def opened(connection, user, purpose: str, **kwargs):
    """`async with opened(...) as ticket:` — the ticket is settled as an error (a failure) or released (nothing
    filed) on the way out unless the body settled it with the provider's figures."""
    async with ending(await aopen(connection, user, purpose, **kwargs)) as ticket:
        yield ticket


@asynccontextmanager
async def ending(ticket: Pass):
    """Ends `ticket` on the way out: settled as an error after an UpstreamError, else released, unless the body
    settled it already."""
    try:
        yield ticket
    except UpstreamError:
        await ticket.asettle(status="error")
        raise
    finally:
        if not ticket.ended:
            await asyncio.shield(ticket.arelease())


def why_not(connection: Connection | None, user) -> str | None:
    """In words, why `user` could not send through `connection` now (no lease taken; pages say it before a send
    is even tried). None when the gate would open, slots aside."""
    if connection is None:
        return None
    try:
        _check(connection, getattr(user, "pk", user), connection.name)  # as the caller read it: no query of its own
    except Refused as refusal:
        return refusal.message
    return None


# ---------------------------------------------------------------- heartbeat (lib/detached.py)


def beat(live: list) -> None:
    Lease.objects.filter(pk__in=[key for key in live if isinstance(key, int)]).update(heartbeat=timezone.now())
    slots.counter().beat([key for key in live if isinstance(key, str)])


def sweep(cutoff, live: list) -> int:
    """Delete the leases nobody stamped since `cutoff` (their process died): their slots and tokens are free.
    (A personal connection's slot in Redis expires by itself.)"""
    rows = Lease.objects.filter(heartbeat__lt=cutoff).exclude(pk__in=[key for key in live if isinstance(key, int)])
    deleted, _ = rows.delete()
    return deleted
