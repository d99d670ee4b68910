"""Where a dataset row can come from besides the grid and an import: a chat turn, a shared conversation's turn, an
evaluation's row. Each app declares its sources in its own `dataset_rows.py` (found by DatasetsConfig.ready):

    @source("chat-turn", "a chat turn")
    def chat_turn(request, ref: str) -> Row: ...   # the row, or Http404 when the user may not see it

so the "Add to a dataset" menu and its view know no app but this one.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.http import Http404


@dataclass
class Row:
    values: dict  # {column: text}; a single {"input": …} goes to a dataset's first column
    expected: str
    name: str = "Dataset"  # a name for a new dataset made from it


@dataclass
class Source:
    name: str
    label: str  # words for a version's message: "Added a row from <label>"
    read: Callable[[object, str], Row]


SOURCES: dict[str, Source] = {}


def source(name: str, label: str):
    def register(function):
        SOURCES[name] = Source(name, label, function)
        return function

    return register


def get(name: str) -> Source:
    if name not in SOURCES:
        raise Http404("No such source of rows.")
    return SOURCES[name]
