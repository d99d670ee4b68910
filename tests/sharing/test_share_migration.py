"""The links of every kind move from their kind's own foreign key to (content type, row id) with nothing lost, and
back on a reverse: the real migrations run on this database (SQLite or PostgreSQL, as the suite is configured)."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from playground.batches.models import Batch
from playground.chat.models import Conversation
from playground.connections.models import Connection
from playground.evaluate.models import Evaluation
from playground.rerank.models import RerankRun
from playground.sharing.models import Share, SharedFile, Watcher
from playground.speech.models import SpeechClip

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("sharing", "0005_shared_file_in_storage")]
AFTER = [("sharing", "0008_share_source_only")]
OLD_KEYS = ["conversation", "rerank_run", "speech_clip", "batch", "evaluation"]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    ContentType.objects.clear_cache()
    return executor.loader.project_state(targets).apps


def _sources(alice) -> dict:
    local = Connection.objects.create(owner=alice, name="Upstream", base_url="http://127.0.0.1:9/v1")
    return {
        "conversation": Conversation.objects.create(owner=alice, connection=local, title="Rivers"),
        "rerank_run": RerankRun.objects.create(owner=alice, connection=local, model="m", query="q", documents=["d"]),
        "speech_clip": SpeechClip.objects.create(owner=alice, connection=local, model="m", text="Hi."),
        "batch": Batch.objects.create(owner=alice, connection=local, remote_id="batch_1"),
        "evaluation": Evaluation.objects.create(owner=alice, title="Capitals"),
    }


def test_every_kinds_links_migrate_to_their_source_and_back(alice):
    sources = _sources(alice)
    try:
        old = _migrate(BEFORE)
        OldShare, OldFile, OldWatcher = (old.get_model("sharing", n) for n in ("Share", "SharedFile", "Watcher"))
        made = {}
        for field, source in sources.items():
            share = OldShare.objects.create(
                owner_id=alice.pk,
                kind=field.split("_")[0],
                title=f"t-{field}",
                content={"field": field},
                views=3,
                **{f"{field}_id": source.pk},
            )
            OldFile.objects.create(share=share, key="k", file=f"f-{field}", name="n", content_type="text/plain", size=1)
            OldWatcher.objects.create(share=share, channel=f"c-{field}")
            made[field] = (share.pk, share.token)

        _migrate(AFTER)
        for field, source in sources.items():
            pk, token = made[field]
            share = Share.objects.get(pk=pk)
            assert (share.source, share.token, share.title, share.views) == (source, token, f"t-{field}", 3)
            assert share.content == {"field": field}
            assert list(SharedFile.objects.filter(share=share).values_list("file", flat=True)) == [f"f-{field}"]
            assert Watcher.objects.filter(share=share).count() == 1
            assert list(Share.objects.for_source(source)) == [share]

        back = _migrate(BEFORE)
        for field, source in sources.items():
            share = back.get_model("sharing", "Share").objects.get(pk=made[field][0])
            assert getattr(share, f"{field}_id") == source.pk
            assert [getattr(share, f"{key}_id") for key in OLD_KEYS if key != field] == [None] * 4
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
