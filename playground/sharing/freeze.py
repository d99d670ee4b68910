"""What a share shows, frozen as JSON when the link is made or updated, and its files copied under the share.

The kind of the share builds the content (each feature's `sharing.py`); this module stores it and copies the
files. The frozen content never holds a key, a connection's name or its base URL: only the model id, the
parameters, the system message and each request body as it was (or would be) sent.
"""

from django.db import transaction

from playground.lib import files as stored_files
from playground.sharing import kinds
from playground.sharing.kinds import NotShareable
from playground.sharing.models import Share, SharedFile, frozen_name

__all__ = ["NotShareable", "freeze", "new_share", "title_of"]


def title_of(source) -> str:
    return kinds.of(source).title(source)


def new_share(owner, source, **fields) -> Share:
    """An unsaved link to `source` (its kind and its title set)."""
    kind = kinds.of(source)
    return Share(owner=owner, kind=kind.name, source=source, title=kind.title(source)[:200], **fields)


def freeze(share: Share) -> None:
    """Build the share's content from its source now and copy its files (replacing what an earlier freeze made)."""
    source = share.source
    kind = kinds.get(share.kind)
    files: list[tuple[str, str, str, str]] = []  # key, stored name of the source, name, content type
    content = kind.freeze(source, files)
    if not share.titled:
        share.title = kind.title(source)[:200]
    with transaction.atomic():
        share.files.all().delete()
        for key, source_name, name, content_type in files:
            with stored_files.open_stream(source_name) as source:
                stored = stored_files.save(frozen_name(share.pk, name), source)
            SharedFile.objects.create(
                share=share, key=key, file=stored, name=name, content_type=content_type, size=stored_files.size(stored)
            )
        share.content = content
        share.save()
