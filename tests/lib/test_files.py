"""lib/files.py: a bucket object read from the middle fetches from there on (one GET with Range), never the whole."""

import io

from playground.lib.files import _RangeReader


class Body(io.BytesIO):
    closed_early = False

    def close(self):
        self.closed_early = True
        super().close()


class Client:
    """Answers get_object like S3, recording each Range asked for."""

    class exceptions:
        ClientError = RuntimeError

    def __init__(self, data: bytes):
        self.data, self.ranges, self.bodies = data, [], []

    def get_object(self, *, Bucket, Key, Range):
        self.ranges.append(Range)
        start = int(Range.removeprefix("bytes=").removesuffix("-"))
        body = Body(self.data[start:])
        self.bodies.append(body)
        return {"Body": body}


def test_a_read_after_a_seek_asks_for_that_range_only():
    data = bytes(range(256)) * 400
    client = Client(data)
    reader = _RangeReader(client, "bucket", "speech/1/clip.mp3", len(data))
    reader.seek(5000)
    assert reader.read(10) == data[5000:5010]
    assert reader.read(5) == data[5010:5015]  # the same response, read on
    assert client.ranges == ["bytes=5000-"]
    reader.seek(100)
    assert reader.read(3) == data[100:103]
    assert client.ranges == ["bytes=5000-", "bytes=100-"] and client.bodies[0].closed_early
    assert reader.seek(-4, io.SEEK_END) == len(data) - 4 and reader.read() == data[-4:]
    assert reader.read(10) == b"" and len(client.ranges) == 3  # at the end: no request
    reader.close()
    assert client.bodies[-1].closed_early
