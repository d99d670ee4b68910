"""View code: the request behind a chat, rerank, speech, voice upload or batch as curl, Python and JavaScript.

The key is read from the PLAYGROUND_API_KEY environment variable, never written into a snippet. Python uses the
openai SDK where the endpoint is OpenAI's (chat, files, batches), the spec's other chat fields going through
extra_body; httpx otherwise. JavaScript is fetch for Node 18+ (an ES module: top-level await).
"""

import json
from dataclasses import dataclass
from pprint import pformat

KEY_VARIABLE = "PLAYGROUND_API_KEY"
# Keyword arguments of the openai SDK's chat.completions.create; any other field goes in extra_body.
OPENAI_CHAT_FIELDS = {
    "model",
    "messages",
    "stream",
    "stream_options",
    "max_tokens",
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "n",
    "stop",
    "response_format",
    "tools",
    "tool_choice",
    "reasoning_effort",
    "seed",
}
HEREDOC = "PLAYGROUND_JSON"


@dataclass
class Snippet:
    label: str
    language: str
    code: str


def _json(body) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False)


def _py(value, indent: int = 4) -> str:
    text = pformat(value, sort_dicts=False, width=100)
    return text.replace("\n", "\n" + " " * indent)


def _kwargs(items: dict, indent: int = 4) -> str:
    pad = " " * indent
    return "".join(f"{pad}{name}={_py(value, indent)},\n" for name, value in items.items())


def _url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + "/" + path


def _curl_json(url: str, body: dict, *, stream: bool = False, output: str = "") -> str:
    flags = " -N" if stream else ""
    out = f" \\\n  --output {output}" if output else ""
    return (
        f"curl -sS --fail-with-body{flags} {url} \\\n"
        f'  -H "Authorization: Bearer ${KEY_VARIABLE}" \\\n'
        f'  -H "Content-Type: application/json"{out} \\\n'
        f"  -d @- <<'{HEREDOC}'\n{_json(body)}\n{HEREDOC}\n"
    )


AUTH_JS = f"Authorization: `Bearer ${{process.env.{KEY_VARIABLE}}}`"


def _js(url: str, body: dict) -> str:
    payload = _json(body).replace("\n", "\n  ")
    return (
        f"const response = await fetch({json.dumps(url)}, {{\n"
        '  method: "POST",\n'
        f'  headers: {{ {AUTH_JS}, "Content-Type": "application/json" }},\n'
        f"  body: JSON.stringify({payload}),\n"
        "});\n"
        "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);\n"
    )


# ---------------------------------------------------------------- chat


def chat(base_url: str, body: dict) -> list[Snippet]:
    """Both variants, streamed and not, whatever the conversation is set to."""
    plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    streamed = {**plain, "stream": True}
    url = _url(base_url, "chat/completions")
    return [
        Snippet("curl", "shell", _curl_json(url, plain)),
        Snippet("curl (streaming)", "shell", _curl_json(url, streamed, stream=True)),
        Snippet("Python", "python", _chat_python(base_url, plain, stream=False)),
        Snippet("Python (streaming)", "python", _chat_python(base_url, streamed, stream=True)),
        Snippet(
            "JavaScript",
            "javascript",
            _js(url, plain) + "const data = await response.json();\nconsole.log(data.choices[0].message.content);\n",
        ),
        Snippet("JavaScript (streaming)", "javascript", _js(url, streamed) + JS_STREAM),
    ]


JS_STREAM = """const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
let buffer = "";
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  buffer += value;
  const lines = buffer.split("\\n");
  buffer = lines.pop();
  for (const line of lines) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const chunk = JSON.parse(line.slice(6));
    process.stdout.write(chunk.choices?.[0]?.delta?.content ?? "");
  }
}
process.stdout.write("\\n");
"""


def _chat_python(base_url: str, body: dict, *, stream: bool) -> str:
    known = {k: v for k, v in body.items() if k in OPENAI_CHAT_FIELDS}
    extra = {k: v for k, v in body.items() if k not in OPENAI_CHAT_FIELDS}
    if extra:
        known["extra_body"] = extra
    call = f"client.chat.completions.create(\n{_kwargs(known)})\n"
    head = (
        "import os\n\nfrom openai import OpenAI\n\n"
        f'client = OpenAI(base_url={base_url!r}, api_key=os.environ["{KEY_VARIABLE}"])\n'
    )
    if not stream:
        return head + f"response = {call}print(response.choices[0].message.content)\n"
    return (
        head + f"stream = {call}for chunk in stream:\n"
        "    if chunk.choices and chunk.choices[0].delta.content:\n"
        '        print(chunk.choices[0].delta.content, end="", flush=True)\n'
        "print()\n"
    )


# ---------------------------------------------------------------- rerank, speech, voices


HTTPX_HEAD = (
    f'import os\n\nimport httpx\n\nheaders = {{"Authorization": f"Bearer {{os.environ[\'{KEY_VARIABLE}\']}}"}}\n'
)


def rerank(base_url: str, body: dict) -> list[Snippet]:
    url = _url(base_url, "rerank")
    python = (
        HTTPX_HEAD + f"body = {_py(body, 0)}\n"
        f"response = httpx.post({url!r}, headers=headers, json=body, timeout=120)\n"
        "response.raise_for_status()\n"
        'for item in response.json()["results"]:\n'
        '    print(item["index"], item["relevance_score"])\n'
    )
    js = _js(url, body) + (
        "const data = await response.json();\n"
        "for (const item of data.results) console.log(item.index, item.relevance_score);\n"
    )
    return [
        Snippet("curl", "shell", _curl_json(url, body)),
        Snippet("Python", "python", python),
        Snippet("JavaScript", "javascript", js),
    ]


def speech(base_url: str, body: dict) -> list[Snippet]:
    url = _url(base_url, "audio/speech")
    output = f"speech.{body.get('response_format', 'mp3')}"
    python = (
        HTTPX_HEAD + f"body = {_py(body, 0)}\n"
        f"with httpx.stream('POST', {url!r}, headers=headers, json=body, timeout=300) as response:\n"
        "    response.raise_for_status()\n"
        f"    with open({output!r}, 'wb') as out:\n"
        "        for chunk in response.iter_bytes():\n"
        "            out.write(chunk)\n"
        f"print('saved {output}')\n"
    )
    js = (
        'import { writeFile } from "node:fs/promises";\n\n'
        + _js(url, body)
        + f"await writeFile({json.dumps(output)}, Buffer.from(await response.arrayBuffer()));\n"
        f'console.log("saved {output}");\n'
    )
    return [
        Snippet("curl", "shell", _curl_json(url, body, output=output)),
        Snippet("Python", "python", python),
        Snippet("JavaScript", "javascript", js),
    ]


def voice_upload(base_url: str, *, model: str, custom_name: str, text: str, filename: str = "voice.wav") -> list:
    url = _url(base_url, "uploads/audio/voice")
    fields = {"customName": custom_name, "text": text, "model": model}
    curl = (
        f"curl -sS --fail-with-body {url} \\\n"
        f'  -H "Authorization: Bearer ${KEY_VARIABLE}" \\\n'
        + "".join(f"  -F {json.dumps(f'{k}={v}')} \\\n" for k, v in fields.items())
        + f"  -F file=@{filename}\n"
    )
    python = (
        HTTPX_HEAD + f"with open({filename!r}, 'rb') as audio:\n"
        f"    response = httpx.post({url!r}, headers=headers, data={_py(fields, 8)},\n"
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
        f"  headers: {{ {AUTH_JS} }},\n"
        "  body: form,\n"
        "});\n"
        "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);\n"
        "console.log(await response.json());\n"
    )
    return [
        Snippet("curl", "shell", curl),
        Snippet("Python", "python", python),
        Snippet("JavaScript", "javascript", js),
    ]


# ---------------------------------------------------------------- batches


def batch(base_url: str, *, filename: str, metadata: dict, completion_window: str = "24h") -> list[Snippet]:
    create = {"endpoint": "/v1/chat/completions", "completion_window": completion_window}
    if metadata:
        create["metadata"] = metadata
    files_url, batches_url = _url(base_url, "files"), _url(base_url, "batches")
    curl = (
        f"FILE_ID=$(curl -sS --fail-with-body {files_url} \\\n"
        f'  -H "Authorization: Bearer ${KEY_VARIABLE}" \\\n'
        f"  -F purpose=batch -F file=@{filename} \\\n"
        "  | python3 -c 'import json, sys; print(json.load(sys.stdin)[\"id\"])')\n"
        f"curl -sS --fail-with-body {batches_url} \\\n"
        f'  -H "Authorization: Bearer ${KEY_VARIABLE}" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        f"  -d \"$(python3 -c 'import json, sys; print(json.dumps({{**json.loads(sys.argv[1]), "
        f'"input_file_id": sys.argv[2]}}))\' {json.dumps(json.dumps(create))} "$FILE_ID")"\n'
    )
    python = (
        "import os\n\nfrom openai import OpenAI\n\n"
        f'client = OpenAI(base_url={base_url!r}, api_key=os.environ["{KEY_VARIABLE}"])\n'
        f"with open({filename!r}, 'rb') as requests:\n"
        '    uploaded = client.files.create(file=requests, purpose="batch")\n'
        f"batch = client.batches.create(\n    input_file_id=uploaded.id,\n{_kwargs(create)})\n"
        "print(batch.id, batch.status)\n"
    )
    js = (
        'import { readFile } from "node:fs/promises";\n\n'
        f"const auth = {{ {AUTH_JS} }};\n"
        "const form = new FormData();\n"
        'form.append("purpose", "batch");\n'
        f'form.append("file", new Blob([await readFile({json.dumps(filename)})]), {json.dumps(filename)});\n'
        f'const uploaded = await fetch({json.dumps(files_url)}, {{ method: "POST", headers: auth, body: form }});\n'
        "if (!uploaded.ok) throw new Error(`${uploaded.status} ${await uploaded.text()}`);\n"
        "const file = await uploaded.json();\n"
        f"const response = await fetch({json.dumps(batches_url)}, {{\n"
        '  method: "POST",\n'
        '  headers: { ...auth, "Content-Type": "application/json" },\n'
        f"  body: JSON.stringify({{ input_file_id: file.id, ...{_json(create)} }}),\n"
        "});\n"
        "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);\n"
        "const created = await response.json();\n"
        "console.log(created.id, created.status);\n"
    )
    return [
        Snippet("curl", "shell", curl),
        Snippet("Python", "python", python),
        Snippet("JavaScript", "javascript", js),
    ]
