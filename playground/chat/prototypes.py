"""The articles the page builds itself (static/js/chat/articles.js), rendered once into the conversation page as
prototypes: a question, an answer's placeholder, and a finished answer's parts (its copy button, actions and
footer). A send over the socket then costs no render on its way to the first delta: the `sent` reply carries the
new rows' data (ids, the question's text, the model) and the page fills a copy of these; the end of an answer the
page watched takes its actions and footer from here too (relay/generation.py's `done` without the article).

Each is chat/_message.html for a stand-in message of the page's conversation whose id is `PLACEHOLDER_ID`, which the
page replaces by the new message's id (in its ids and addresses): the same template, so the same article as a
reload's.
"""

from playground.chat import render_cache
from playground.chat.models import Conversation, Message
from playground.chat.services.turns import known_attachments

PLACEHOLDER_ID = 9_007_199_254_740  # digits no real message id of this page shares (the page splits on it)


def _stand_in(conversation: Conversation, parent_id=None, **fields) -> Message:
    message = Message(pk=PLACEHOLDER_ID, conversation=conversation, parent_id=parent_id, **fields)
    message.sibling_ids, message.sibling_index, message.sibling_count = [PLACEHOLDER_ID], 1, 1
    message.prev_sibling = message.next_sibling = None
    known_attachments(message, [])
    return message


def prototypes(conversation: Conversation, csrf_token=None) -> dict[str, str]:
    """The three prototypes by name (question, placeholder, finished), for the page's `json_script` (a script the
    browser neither runs nor shows: the page holds no second thread of articles, not even an inert one)."""
    parts = {
        "question": _stand_in(conversation, role="user", status=Message.COMPLETE, content="-"),
        "placeholder": _stand_in(conversation, role="assistant", status=Message.STREAMING, model_id="-"),
        "finished": _stand_in(  # an answer follows its question: no "Insert above"
            conversation,
            parent_id=PLACEHOLDER_ID,
            role="assistant",
            status=Message.COMPLETE,
            content="-",
            model_id="-",
            usage={"prompt_tokens": 1},
            trace_id="-",
        ),
    }
    return {name: str(render_cache.article(message, csrf_token)) for name, message in parts.items()}
