"""Compare's input: each refused column is named, and a comparison over the user's limit starts nothing."""

import pytest
from asgiref.sync import async_to_sync

from playground.chat.relay import limits
from playground.chat.services import compare
from playground.chat.services.branches import Refused

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("columns", "words"),
    [
        ([{"model": "local/chat"}], "columns: choose 2 to 4"),
        ([{"model": "local/chat"}] * 5, "columns: choose 2 to 4"),
        ([{"model": "local/chat"}, {"model": "nope/none"}], "columns[2].model: nope/none is not a chat model"),
        ([{"model": "local/chat"}, {"model": "local/chat", "params": "{"}], "columns[2].params: not valid JSON"),
        (
            [{"model": "local/chat"}, {"model": "local/chat", "params": {"temperature": 9}}],
            "columns[2]: temperature",
        ),
    ],
)
@pytest.mark.needs_local_api
def test_bad_columns_are_refused_naming_the_column(make_conversation, columns, words):
    conversation = make_conversation()
    with pytest.raises(Refused) as refused:
        async_to_sync(compare.start)(conversation, {"content": "hi", "columns": columns})
    assert words in str(refused.value)
    assert not conversation.messages.exists()


@pytest.mark.needs_local_api
def test_a_comparison_over_the_users_limit_starts_nothing(make_conversation, monkeypatch):
    monkeypatch.setattr(limits, "MAX_RUNNING_PER_USER", 3)
    conversation = make_conversation()
    columns = [{"model": "local/chat"}] * 4
    with pytest.raises(limits.TooBusy, match="the limit is 3 at once"):
        async_to_sync(compare.start)(conversation, {"content": "hi", "columns": columns})
    assert not conversation.messages.exists()
