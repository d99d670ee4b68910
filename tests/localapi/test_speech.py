"""POST /audio/speech over real HTTP: every format decoded, sample rates, limits, voices, dialogue, streaming."""

import io
import statistics
import time
import wave
from array import array

import av
import httpx
import pytest

from tests.waiting import wait_for

SENTENCE = "Hello there, my friend. How are you doing today?"


def post(live_server, body, **headers):
    return httpx.post(
        f"{live_server.api_url}/audio/speech",
        json={"model": "local/tts", **body},
        headers={"Authorization": f"Bearer {live_server.api_key}", **headers},
        timeout=60,
    )


def speak(live_server, **body):
    response = post(live_server, {"input": SENTENCE, **body})
    assert response.status_code == 200, response.text
    return response


def decode(data: bytes):
    """(container format, codec, sample rate, seconds) of encoded audio, decoded with PyAV."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        samples, rate = 0, 0
        for frame in container.decode(stream):
            samples += frame.samples
            rate = frame.sample_rate
        return container.format.name, stream.codec_context.name, rate, samples / rate


def pcm_samples(live_server, text, **body) -> array:
    response = speak(live_server, input=text, response_format="pcm", sample_rate=8000, stream=False, **body)
    return array("h", response.content)


def pitch(samples: array, rate: int = 8000) -> float:
    """Median autocorrelation pitch (Hz) of the voiced 40 ms frames."""
    size = int(rate * 0.04)
    estimates = []
    for start in range(0, len(samples) - size, size):
        window = samples[start : start + size]
        if sum(x * x for x in window) / size < 1e6:
            continue
        best, best_lag = 0, 0
        for lag in range(rate // 400, rate // 60):
            value = sum(window[i] * window[i + lag] for i in range(0, size - lag, 2))
            if value > best:
                best, best_lag = value, lag
        if best_lag:
            estimates.append(rate / best_lag)
    return statistics.median(estimates)


def test_mp3_is_the_default_format_at_44100_hz(live_server):
    response = speak(live_server, stream=False)
    assert response.headers["content-type"] == "audio/mpeg"
    assert response.headers["x-service-trace-id"]
    container, codec, rate, seconds = decode(response.content)
    assert (container, codec, rate) == ("mp3", "mp3float", 44100)
    assert 1.5 < seconds < 6


def test_opus_is_ogg_opus_at_48000_hz(live_server):
    response = speak(live_server, response_format="opus")
    assert response.headers["content-type"] == "audio/ogg"
    assert response.content[:4] == b"OggS"
    assert b"OpusHead" in response.content[:100]
    container, codec, rate, seconds = decode(response.content)
    assert (container, codec, rate) == ("ogg", "opus", 48000)
    assert 1.5 < seconds < 6


@pytest.mark.parametrize("stream", [False, True])
def test_wav_is_riff_wave_16_bit_mono(live_server, stream):
    response = speak(live_server, response_format="wav", stream=stream)
    assert response.headers["content-type"] == "audio/wav"
    data = response.content
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    if stream:
        # Streamed: the sizes are unknown when the header goes out.
        assert data[4:8] == b"\xff\xff\xff\xff" and data[40:44] == b"\xff\xff\xff\xff"
        container, codec, rate, seconds = decode(data)
        assert (container, codec, rate) == ("wav", "pcm_s16le", 44100)
    else:
        with wave.open(io.BytesIO(data)) as clip:
            assert (clip.getnchannels(), clip.getsampwidth(), clip.getframerate()) == (1, 2, 44100)
            seconds = clip.getnframes() / clip.getframerate()
            assert clip.getnframes() * 2 + 44 == len(data)
    assert 1.5 < seconds < 6


def test_pcm_is_raw_16_bit_samples(live_server):
    response = speak(live_server, response_format="pcm", sample_rate=16000)
    assert response.headers["content-type"] == "audio/pcm"
    assert len(response.content) % 2 == 0
    assert 1.5 < len(response.content) / 2 / 16000 < 6
    assert max(array("h", response.content)) > 1000


@pytest.mark.parametrize(
    ("response_format", "sample_rate"),
    [("wav", 8000), ("wav", 24000), ("wav", 32000), ("pcm", 44100), ("mp3", 32000), ("opus", 48000)],
)
def test_the_sample_rate_is_honoured(live_server, response_format, sample_rate):
    response = speak(live_server, response_format=response_format, sample_rate=sample_rate, stream=False)
    if response_format == "pcm":
        assert 1.5 < len(response.content) / 2 / sample_rate < 6
    else:
        assert decode(response.content)[2] == sample_rate


@pytest.mark.parametrize(
    ("response_format", "sample_rate", "allowed"),
    [("opus", 44100, "48000"), ("mp3", 16000, "32000, 44100"), ("wav", 48000, "44100"), ("pcm", 22050, "8000")],
)
def test_a_rate_the_format_does_not_allow_is_400_naming_both(live_server, response_format, sample_rate, allowed):
    response = post(live_server, {"input": "Hi.", "response_format": response_format, "sample_rate": sample_rate})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 20015
    assert body["message"].startswith("sample_rate:")
    assert response_format in body["message"] and allowed in body["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"input": ""}, ["input:"]),
        ({"input": "a" * 128001}, ["input:", "128000"]),
        ({"input": "Hi.", "max_tokens": 0}, ["max_tokens:"]),
        ({"input": "word " * 2000, "max_tokens": 31000}, ["max_tokens:", "32768"]),
        ({"input": "Hi.", "speed": 0.2}, ["speed:", "0.25", "4"]),
        ({"input": "Hi.", "speed": 4.5}, ["speed:"]),
        ({"input": "Hi.", "gain": -11}, ["gain:", "-10", "10"]),
        ({"input": "Hi.", "response_format": "flac"}, ["response_format:"]),
        ({"input": "Hi.", "stream": "yes"}, ["stream:"]),
        ({"input": "Hi.", "voice": "local/tts:nobody"}, ["voice:", "local/tts:alex"]),
        ({"input": "Hi.", "references": [{"audio": "local/tts:anna"}]}, ["references:", "2"]),
        ({"input": "Hi.", "references": [{"audio": "local/tts:anna"}, {"text": "x"}]}, ["references[1].audio"]),
    ],
)
def test_invalid_requests_are_400_naming_the_field_and_limit(live_server, body, words):
    response = post(live_server, body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == 20015
    for word in words:
        assert word in response.json()["message"]


def test_the_longest_input_within_the_token_budget_is_accepted(live_server):
    text = ("Word " * 25600)[:128000]
    with httpx.stream(
        "POST",
        f"{live_server.api_url}/audio/speech",
        json={"model": "local/tts", "input": text, "max_tokens": 1},
        headers={"Authorization": f"Bearer {live_server.api_key}"},
    ) as response:
        assert response.status_code == 200
        assert next(response.iter_raw())


def test_voice_and_references_together_are_400(live_server):
    references = [{"audio": "local/tts:anna", "text": "Hi"}, {"audio": "local/tts:david", "text": "Yo"}]
    response = post(live_server, {"input": "Hi.", "voice": "local/tts:alex", "references": references})
    assert response.status_code == 400
    assert "mutually exclusive" in response.json()["message"]


def test_only_the_tts_model_is_allowed(live_server):
    response = post(live_server, {"model": "local/chat", "input": "Hi."})
    assert response.status_code == 400
    assert response.json()["code"] == 20012
    assert "local/tts" in response.json()["message"]


def test_speed_changes_the_duration(live_server):
    normal = len(pcm_samples(live_server, SENTENCE))
    fast = len(pcm_samples(live_server, SENTENCE, speed=2))
    slow = len(pcm_samples(live_server, SENTENCE, speed=0.25))
    assert fast < normal * 0.7
    assert slow > normal * 2


def test_gain_changes_the_loudness(live_server):
    def rms(samples):
        return (sum(x * x for x in samples) / len(samples)) ** 0.5

    quiet = rms(pcm_samples(live_server, SENTENCE, gain=-10))
    normal = rms(pcm_samples(live_server, SENTENCE))
    assert 0.25 < quiet / normal < 0.4  # -10 dB is a factor 0.316


def test_s1_and_s2_turns_are_spoken_by_two_voices(live_server):
    dialogue = pcm_samples(live_server, f"[S1] {SENTENCE} [S2] {SENTENCE}", voice="local/tts:alex")
    monologue = pcm_samples(live_server, f"[S1] {SENTENCE} [S1] {SENTENCE}", voice="local/tts:alex")
    cut = len(dialogue) * 2 // 5
    first, second = pitch(dialogue[:cut]), pitch(dialogue[-cut:])
    assert second > first * 1.6, (first, second)
    cut = len(monologue) * 2 // 5
    assert 0.8 < pitch(monologue[-cut:]) / pitch(monologue[:cut]) < 1.25


def test_references_choose_the_voices_of_s1_and_s2(live_server):
    references = [{"audio": "local/tts:diana", "text": "Hi"}, {"audio": "local/tts:david", "text": "Yo"}]
    dialogue = pcm_samples(live_server, f"[S1] {SENTENCE} [S2] {SENTENCE}", references=references)
    cut = len(dialogue) * 2 // 5
    assert pitch(dialogue[:cut]) > pitch(dialogue[-cut:]) * 1.6


def test_the_presets_sound_distinct(live_server):
    low = pitch(pcm_samples(live_server, SENTENCE, voice="local/tts:david"))
    high = pitch(pcm_samples(live_server, SENTENCE, voice="local/tts:diana"))
    assert high > low * 1.6


def test_a_stream_arrives_in_several_chunks_the_first_well_before_the_end(live_server):
    text = " ".join(f"This is sentence number {i} of a rather long text." for i in range(30))
    arrivals = []
    started = time.monotonic()
    with httpx.stream(
        "POST",
        f"{live_server.api_url}/audio/speech",
        json={"model": "local/tts", "input": text, "response_format": "mp3"},
        headers={"Authorization": f"Bearer {live_server.api_key}"},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert response.headers["transfer-encoding"] == "chunked"
        assert "content-length" not in response.headers
        data = b""
        for chunk in response.iter_raw():
            arrivals.append(time.monotonic() - started)
            data += chunk
    assert len(arrivals) >= 5
    assert arrivals[0] < arrivals[-1] / 3
    assert decode(data)[3] > 60  # 30 sentences of about 3 s each


def test_closing_the_connection_stops_the_synthesis(live_server):
    text = " ".join(f"Sentence {i} keeps the synthesizer busy for a while." for i in range(2000))
    headers = {"Authorization": f"Bearer {live_server.api_key}"}
    with httpx.stream(
        "POST", f"{live_server.api_url}/audio/speech", json={"model": "local/tts", "input": text}, headers=headers
    ) as response:
        trace_id = response.headers["x-service-trace-id"]
        next(response.iter_raw())

    def ended():
        streams = httpx.get(f"{live_server.api_url}/debug/streams", headers=headers).json()["recent"]
        record = next(s for s in streams if s["trace_id"] == trace_id)
        return record if record["status"] != "streaming" else None

    record = wait_for(ended, timeout=10, what="the synthesis to end", every=0.2)
    assert record["status"] == "cancelled"
    assert record["chunks_sent"] < 500


def test_the_drop_after_fault_cuts_the_stream(live_server):
    text = " ".join(f"Sentence {i}." for i in range(40))
    headers = {"Authorization": f"Bearer {live_server.api_key}"}
    body = {"model": "local/tts", "input": text, "response_format": "pcm"}
    full = httpx.post(f"{live_server.api_url}/audio/speech", json=body, headers=headers, timeout=60)
    received = b""
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream(
            "POST",
            f"{live_server.api_url}/audio/speech",
            json=body,
            headers={**headers, "X-Local-Fault": "drop-after-3"},
            timeout=60,
        ) as cut,
    ):
        assert cut.status_code == 200
        trace_id = cut.headers["x-service-trace-id"]
        for part in cut.iter_raw():
            received += part
    assert 0 < len(received) < len(full.content) / 5
    streams = httpx.get(f"{live_server.api_url}/debug/streams", headers=headers).json()["recent"]
    record = next(s for s in streams if s["trace_id"] == trace_id)
    assert record["chunks_sent"] == 3 and record["status"] in {"failed", "cancelled"}


def test_status_faults_are_honoured(live_server):
    response = post(live_server, {"input": "Hi."}, **{"X-Local-Fault": "503"})
    assert response.status_code == 503
    assert response.json()["code"] == 50505
    assert response.headers["retry-after"] == "5"
