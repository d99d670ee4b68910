"""A speech clip as a kind of share: its words, voice and parameters, and a copy of its audio."""

import json
import secrets

from django.urls import reverse
from django.utils import timezone

from playground.lib import files as stored_files
from playground.sharing import snippets
from playground.sharing.kinds import Kind, NotShareable
from playground.speech import services
from playground.speech.models import SpeechClip, get_clip


class SpeechKind(Kind):
    name, label, plural = "speech", "Speech clip", "Speech clips"
    model, template = "speech.SpeechClip", "speech/shared.html"
    fork_words = ", with its audio,"

    def get(self, request, pk):
        return get_clip(request, pk)

    def title(self, item):
        return f"Speech: {item.text[:80]}"

    def url(self, item):
        return reverse("speech:index")

    def freeze(self, item, files):
        if item.streaming:
            raise NotShareable("This clip is still being synthesized: share it once it is complete.")
        if stored_files.size(item.file) is not None:
            files.append(("audio", item.file, item.download_name(), item.content_type))
        return {
            "model": item.model,
            "voice": item.voice_label,
            "text": item.text,
            "response_format": item.response_format,
            "sample_rate": item.sample_rate,
            "params": item.params,
            "status": item.status,
            "bytes": item.bytes,
            "trace_id": item.trace_id,
            "created": item.created.isoformat(),
            "request": services.request_body(item),
            "playable": item.response_format != "pcm",
        }

    def describe(self, content):
        return f"{content['model']} speaking with {content['voice']}: {content['text'][:120]}"

    def show(self, share, content, request):
        content["request_json"] = json.dumps(content["request"], indent=2, ensure_ascii=False)
        return content

    def model_of(self, content):
        return content["model"]

    def fork(self, share, user, connection, offered):
        """A finished clip with its own copy of the audio."""
        content = share.content
        status = content["status"] if content["status"] != SpeechClip.STREAMING else SpeechClip.INCOMPLETE
        clip = SpeechClip.objects.create(
            owner=user,
            connection=connection,
            model=content["model"],
            voice=content["voice"] if content["voice"] != "default" else "",
            text=content["text"],
            response_format=content["response_format"],
            sample_rate=content["sample_rate"],
            params=content["params"] or {},
            status=status,
            bytes=content["bytes"],
            trace_id=content["trace_id"],
            finished=timezone.now(),
        )
        audio = share.files.filter(key="audio").first()
        if audio is not None and stored_files.size(audio.file) is not None:
            name = f"speech/{user.pk}/{clip.pk}-{secrets.token_hex(6)}.{clip.response_format}"
            with stored_files.open_stream(audio.file) as source:
                clip.file = stored_files.save(name, source)
            clip.bytes = stored_files.size(clip.file)
            clip.save(update_fields=["file", "bytes"])
        return reverse("speech:index")

    def code(self, item, base_url):
        return speech_snippets(base_url, services.request_body(item)), []


def speech_snippets(base_url: str, body: dict) -> list[snippets.Snippet]:
    url = snippets.endpoint(base_url, "audio/speech")
    output = f"speech.{body.get('response_format', 'mp3')}"
    python = (
        snippets.HTTPX_HEAD + f"body = {snippets.py(body, 0)}\n"
        f"with httpx.stream('POST', {url!r}, headers=headers, json=body, timeout=300) as response:\n"
        "    response.raise_for_status()\n"
        f"    with open({output!r}, 'wb') as out:\n"
        "        for chunk in response.iter_bytes():\n"
        "            out.write(chunk)\n"
        f"print('saved {output}')\n"
    )
    js = (
        'import { writeFile } from "node:fs/promises";\n\n'
        + snippets.js(url, body)
        + f"await writeFile({json.dumps(output)}, Buffer.from(await response.arrayBuffer()));\n"
        f'console.log("saved {output}");\n'
    )
    return [
        snippets.Snippet("curl", "shell", snippets.curl_json(url, body, output=output)),
        snippets.Snippet("Python", "python", python),
        snippets.Snippet("JavaScript", "javascript", js),
    ]


def voice_upload_snippets(
    base_url: str, *, model: str, custom_name: str, text: str, filename: str = "voice.wav"
) -> list:
    url = snippets.endpoint(base_url, "uploads/audio/voice")
    fields = {"customName": custom_name, "text": text, "model": model}
    curl = (
        f"curl -sS --fail-with-body {url} \\\n"
        f'  -H "Authorization: Bearer ${snippets.KEY_VARIABLE}" \\\n'
        + "".join(f"  -F {json.dumps(f'{k}={v}')} \\\n" for k, v in fields.items())
        + f"  -F file=@{filename}\n"
    )
    python = (
        snippets.HTTPX_HEAD + f"with open({filename!r}, 'rb') as audio:\n"
        f"    response = httpx.post({url!r}, headers=headers, data={snippets.py(fields, 8)},\n"
        f"                          files={{'file': ({filename!r}, audio)}}, timeout=120)\n"
        "response.raise_for_status()\n"
        "print(response.json())\n"
    )
    js = (
        'import { readFile } from "node:fs/promises";\n\n'
        "const form = new FormData();\n"
        + "".join(f"form.append({json.dumps(k)}, {json.dumps(v)});\n" for k, v in fields.items())
        + f'form.append("file", new Blob([await readFile({json.dumps(filename)})]), {json.dumps(filename)});\n'
        f"const response = await fetch({json.dumps(url)}, {{\n"
        '  method: "POST",\n'
        f"  headers: {{ {snippets.AUTH_JS} }},\n"
        "  body: form,\n"
        "});\n"
        "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);\n"
        "console.log(await response.json());\n"
    )
    return [
        snippets.Snippet("curl", "shell", curl),
        snippets.Snippet("Python", "python", python),
        snippets.Snippet("JavaScript", "javascript", js),
    ]
