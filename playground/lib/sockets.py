"""Every websocket of a signed-in user can be closed at once: an account's sockets share one channel-layer group.

Each consumer class mixes in `AccountSockets`; `close_account_sockets(user_id)` (a deactivation) then closes every
one of that user's sockets, on every process, with code 4401. tests/operators/test_deactivate.py checks that every
websocket route's consumer has the mixin.
"""

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

CLOSED = 4401


def account_group(user_id: int) -> str:
    return f"account.{user_id}"


class AccountSockets:
    async def websocket_connect(self, message):
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            # Channels joins `groups` before connect() and leaves them on disconnect.
            self.groups = [*self.groups, account_group(user.pk)]
        await super().websocket_connect(message)

    async def account_closed(self, event):
        await self.close(code=CLOSED)


def close_account_sockets(user_id: int) -> None:
    async_to_sync(get_channel_layer().group_send)(account_group(user_id), {"type": "account.closed"})
