"""What can be shared: each feature declares its kind in its own `sharing.py`, listed by dotted path in
settings.SHARE_KINDS (as Django loads MIDDLEWARE). Sharing keeps the tokens, visibility, expiry, frozen files and
the viewer's shell; everything that knows a feature's rows is the kind's: its page template, its snippets, the
owner check, the routes it adds. The source model declares `shares = share_links()` (sharing.models) so that
deleting it deletes its links.

A kind is one class in its app; sharing never imports a feature nor names one, it asks the registry.
"""

from functools import cache

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import Http404
from django.utils.module_loading import import_string


class NotShareable(Exception):
    """The source cannot be shared as it is (e.g. still being made); the message says why."""


class Kind:
    name = ""  # the share's `kind` and the word in URLs
    label = ""  # what one is called, capitalised: the share page's kicker
    plural = ""  # the team library's heading
    model = ""  # the source's model label, "app_label.ModelName"
    template = ""  # the share page, extending "sharing/_share_base.html"
    library = True  # may be moved to a team library
    live = False  # its links may follow the source live
    forkable = True
    fork_words = ""  # what a fork copies, after "A copy goes into your account": ", with its audio,"

    def get(self, request, pk: int):
        """The user's own item, or 404 for anyone else's."""
        raise NotImplementedError

    def title(self, item) -> str:
        raise NotImplementedError

    def url(self, item) -> str:
        """Where the owner sees the item (the links page's "back")."""
        raise NotImplementedError

    def freeze(self, item, files: list) -> dict:
        """The share's content as JSON; appends (key, path, name, content type) of each file to copy."""
        raise NotImplementedError

    def describe(self, content: dict) -> str:
        """One sentence for the share page's description."""
        raise NotImplementedError

    def show(self, share, content: dict, request) -> dict:
        """The content as the share page renders it (decorated, paged, or read live from the source)."""
        return content

    def model_of(self, content: dict) -> str:
        """The model a fork continues with."""
        return ""

    def fork(self, share, user, connection, offered: bool) -> str:
        """Copy the share into the user's account on `connection`; the URL of the copy."""
        raise Http404(f"A shared {self.label.lower()} cannot be forked.")

    def code(self, item, base_url: str) -> tuple[list, list[str]] | None:
        """The snippets (sharing.snippets) that repeat the item's request, and notes; None when there is none."""
        return None

    def connection(self, item):
        """The connection the item's requests go to (its base URL shows in View code)."""
        return item.connection

    def export(self, item, fmt: str) -> tuple[str, str] | None:
        """(body, content type) of the item exported as `fmt`; None for a format the kind has not."""
        return None

    def filename(self, item) -> str:
        """The exported file's name, without its extension."""
        return f"{self.name}-{item.pk}"

    def urls(self) -> list:
        """More routes of the kind under the sharing namespace (an export, an import, a count of viewers)."""
        return []


@cache
def registry() -> dict[str, Kind]:
    kinds = [import_string(path)() for path in settings.SHARE_KINDS]
    return {kind.name: kind for kind in kinds}


@receiver(setting_changed)
def _forget(setting, **kwargs) -> None:
    if setting == "SHARE_KINDS":
        registry.cache_clear()


def all_kinds() -> list[Kind]:
    return list(registry().values())


def get(name: str) -> Kind:
    kind = registry().get(name)
    if kind is None:
        raise Http404("No such kind of share.")
    return kind


def of(source) -> Kind:
    """The kind of a source row."""
    return of_model(source)


def of_model(model) -> Kind:
    """The kind whose source is `model` (a model class or one of its rows)."""
    label = model._meta.label
    for kind in registry().values():
        if kind.model == label:
            return kind
    raise LookupError(f"{label} is not a kind of share (settings.SHARE_KINDS).")
