"""Audio encoders for /audio/speech, fed 22,050 Hz mono int16 samples a sentence at a time (PyAV).

| format | container / codec | Content-Type | sample rates (Hz) | default |
|---|---|---|---|---|
| mp3 | MPEG audio, libmp3lame | audio/mpeg | 32000, 44100 | 44100 |
| opus | Ogg, libopus | audio/ogg | 48000 | 48000 |
| wav | RIFF WAVE, 16-bit PCM | audio/wav | 8000, 16000, 24000, 32000, 44100 | 44100 |
| pcm | raw signed 16-bit little-endian mono | audio/pcm | 8000, 16000, 24000, 32000, 44100 | 44100 |

The spec states a default of 32000 but names 44100 as the default of wav, pcm and mp3; we follow the
per-format text (44100), and opus allows only 48000.

A streamed WAV cannot know its length up front: its header carries 0xFFFFFFFF as the RIFF and data sizes
("unknown length", which ffmpeg, browsers and most players accept and read to the end). With stream false the
header carries the exact sizes. Gain (dB) is applied to the samples by ffmpeg's `volume` filter.
"""

import io
import struct

import av

INPUT_RATE = 22050
CONTENT_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "wav": "audio/wav", "pcm": "audio/pcm"}
SAMPLE_RATES = {
    "mp3": (32000, 44100),
    "opus": (48000,),
    "wav": (8000, 16000, 24000, 32000, 44100),
    "pcm": (8000, 16000, 24000, 32000, 44100),
}
DEFAULT_SAMPLE_RATES = {"mp3": 44100, "opus": 48000, "wav": 44100, "pcm": 44100}
_CONTAINERS = {"mp3": ("mp3", "libmp3lame"), "opus": ("ogg", "libopus")}
UNKNOWN_SIZE = 0xFFFFFFFF


def wav_header(sample_rate: int, data_size: int | None) -> bytes:
    """A 44-byte RIFF WAVE header for mono 16-bit PCM; `None` means a stream of unknown length."""
    riff_size = UNKNOWN_SIZE if data_size is None else 36 + data_size
    data = UNKNOWN_SIZE if data_size is None else data_size
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        riff_size,
        b"WAVE",
        b"fmt ",
        16,
        1,  # PCM
        1,  # mono
        sample_rate,
        sample_rate * 2,
        2,
        16,
        b"data",
        data,
    )


class _Sink:
    """A write-only, non-seekable file for PyAV: collects what the muxer writes until drained."""

    def __init__(self):
        self._parts: list[bytes] = []

    def write(self, data) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def drain(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


class Encoder:
    """`start()`, then `encode(samples)` per sentence, then `finish()`; each returns the bytes ready to send.

    With stream false everything is returned by `finish()` (the whole clip, with exact WAV sizes).
    """

    def __init__(self, response_format: str, sample_rate: int, *, gain_db: float = 0.0, stream: bool = True):
        self.format = response_format
        self.sample_rate = sample_rate
        self.stream = stream
        self._pts = 0
        self._held: list[bytes] = []
        self._gain = self._gain_graph(gain_db) if gain_db else None
        if response_format in _CONTAINERS:
            container_format, codec = _CONTAINERS[response_format]
            self._sink = _Sink() if stream else io.BytesIO()
            # Small Ogg pages so a streamed opus clip goes out sentence by sentence, not once a second.
            options = {"page_duration": "100000"} if container_format == "ogg" else {}
            self._container = av.open(self._sink, "w", format=container_format, options=options)
            self._stream = self._container.add_stream(codec, rate=sample_rate, layout="mono")
            self._resampler = None
        else:
            self._container = None
            self._resampler = av.AudioResampler(format="s16", layout="mono", rate=sample_rate)

    @staticmethod
    def _gain_graph(gain_db: float):
        graph = av.filter.Graph()
        source = graph.add_abuffer(format="s16", sample_rate=INPUT_RATE, layout="mono", time_base=f"1/{INPUT_RATE}")
        volume = graph.add("volume", f"volume={gain_db}dB")
        sink = graph.add("abuffersink")
        source.link_to(volume)
        volume.link_to(sink)
        graph.configure()
        return graph

    def start(self) -> bytes:
        if self.format == "wav" and self.stream:
            return wav_header(self.sample_rate, None)
        return b""

    def _frames(self, samples: bytes):
        count = len(samples) // 2
        frame = av.AudioFrame(format="s16", layout="mono", samples=count)
        frame.planes[0].update(samples[: count * 2])
        frame.sample_rate = INPUT_RATE
        frame.pts = self._pts
        self._pts += count
        if self._gain is None:
            return [frame]
        self._gain.push(frame)
        out = []
        while True:
            try:
                out.append(self._gain.pull())
            except (BlockingIOError, av.error.EOFError):
                return out

    def _emit(self, frames) -> bytes:
        if self._container is not None:
            for frame in frames:
                self._container.mux(self._stream.encode(frame))
            return self._sink.drain() if self.stream else b""
        pcm = b"".join(bytes(f.planes[0])[: f.samples * 2] for frame in frames for f in self._resampler.resample(frame))
        if self.stream:
            return pcm
        self._held.append(pcm)
        return b""

    def encode(self, samples: bytes) -> bytes:
        if len(samples) < 2:
            return b""
        return self._emit(self._frames(samples))

    def finish(self) -> bytes:
        if self._container is not None:
            self._container.mux(self._stream.encode(None))
            self._container.close()
            return self._sink.drain() if self.stream else self._sink.getvalue()
        tail = self._emit([None])
        if self.stream:
            return tail
        data = b"".join(self._held)
        self._held.clear()
        return (wav_header(self.sample_rate, len(data)) + data) if self.format == "wav" else data
