"""What a chat command did (chat/commands.py): one `Outcome`, which the htmx views and the websocket actions turn
into a page or a frame, and the words of the refusals every command shares."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from playground.chat.forms import ComposerForm
from playground.chat.models import Conversation, Message
from playground.chat.panel import PanelProblems
from playground.chat.services import Turn
from playground.lib import drain

SENT, INVALID, REFUSED, FAILED = "sent", "invalid", "refused", "failed"

UNAVAILABLE = {
    "live_unavailable": (
        "The live channel (Redis) cannot be reached, so nothing was sent or saved. Your message is still here: "
        "try again in a moment; if it persists, the operator should check Redis."
    ),
    "database_unavailable": (
        "The database cannot be reached, so nothing was sent or saved. Your message is still here: try again in "
        "a moment; if it persists, the operator should check the database."
    ),
    "draining": drain.SEND_REFUSAL,
}
RETRY_UNAVAILABLE = {
    "live_unavailable": "The live channel (Redis) cannot be reached; nothing changed. Try again in a moment.",
    "database_unavailable": "The database cannot be reached; nothing changed. Try again in a moment.",
    "draining": drain.REFUSAL,
}


@dataclass
class Outcome:
    """What a command did. `kind`: sent (done: `turns` started, `message` changed), invalid (nothing done:
    `errors` name the field and the limit), refused (nothing done: not this user's, or not possible; `status` as
    HTTP says it) or failed (nothing done: `problem`, the database or the live channel, is down)."""

    kind: str
    errors: list[str] = field(default_factory=list)
    status: int = 200
    problem: str = ""
    conversation: Conversation | None = None
    turns: list[Turn] = field(default_factory=list)
    message: Message | None = None
    html: str = ""  # the articles a send, a retry or tool results add (the question, the answer's placeholder)
    notice: str = ""  # compare: which columns do not get the attachments
    composer: ComposerForm | None = None  # a send's, for the page to show it again with its errors
    panel: PanelProblems | None = None

    @property
    def sent(self) -> bool:
        return self.kind == SENT

    @property
    def message_ids(self) -> list[int]:
        """The messages made or shown: a turn's question and answer, each compare column's answer."""
        ids = [self.message.pk] if self.message is not None else []
        for turn in self.turns:
            if turn.user_message is not None and turn.user_message.pk not in ids:
                ids.append(turn.user_message.pk)
            ids.append(turn.assistant.pk)
        return ids


def refused(words: str, status: int = 409) -> Outcome:
    return Outcome(REFUSED, [words], status=status)


def failed(problem: str, words: dict = RETRY_UNAVAILABLE) -> Outcome:
    return Outcome(FAILED, [words[problem]], status=503, problem=problem)


OnSent = Callable[[Outcome], Awaitable[None]] | None
