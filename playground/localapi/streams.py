"""In-process registry of chat streams, shown by GET /debug/streams.

It lets a test (or a curious user) see that when a client closes the connection mid-stream, the local API
notices and stops generating: the stream is then recorded as "cancelled". Per process, like the rate limits.
A key sees its own streams in `recent`; the counts are the process's.
"""

from collections import OrderedDict
from dataclasses import asdict, dataclass, field

RECENT = 200


@dataclass
class StreamRecord:
    trace_id: str
    model: str
    status: str = "streaming"  # streaming | completed | cancelled | failed
    chunks_sent: int = 0
    owner: str = field(default="", repr=False)


_streams: "OrderedDict[str, StreamRecord]" = OrderedDict()
_totals = {"completed": 0, "cancelled": 0, "failed": 0}


def start(trace_id: str, model: str, owner: str) -> StreamRecord:
    record = StreamRecord(trace_id=trace_id, model=model, owner=owner)
    _streams[trace_id] = record
    while len(_streams) > RECENT:
        oldest = next(iter(_streams.values()))
        if oldest.status == "streaming":
            break
        _streams.popitem(last=False)
    return record


def finish(record: StreamRecord, status: str) -> None:
    if record.status == "streaming":
        record.status = status
        _totals[status] = _totals.get(status, 0) + 1


def snapshot(owner: str) -> dict:
    records = list(_streams.values())
    return {
        "active": sum(1 for r in records if r.status == "streaming"),
        "completed": _totals["completed"],
        "cancelled": _totals["cancelled"],
        "failed": _totals["failed"],
        "recent": [_public(r) for r in reversed(records) if r.owner == owner],
    }


def _public(record: StreamRecord) -> dict:
    fields = asdict(record)
    del fields["owner"]
    return fields
