"""View code of a conversation: its next request as curl, Python (the openai SDK, the spec's other fields going
through extra_body) and JavaScript, streamed and not."""

from playground.sharing import snippets

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


def chat(base_url: str, body: dict) -> list[snippets.Snippet]:
    """Both variants, streamed and not, whatever the conversation is set to."""
    plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    streamed = {**plain, "stream": True}
    url = snippets.endpoint(base_url, "chat/completions")
    return [
        snippets.Snippet("curl", "shell", snippets.curl_json(url, plain)),
        snippets.Snippet("curl (streaming)", "shell", snippets.curl_json(url, streamed, stream=True)),
        snippets.Snippet("Python", "python", _chat_python(base_url, plain, stream=False)),
        snippets.Snippet("Python (streaming)", "python", _chat_python(base_url, streamed, stream=True)),
        snippets.Snippet(
            "JavaScript",
            "javascript",
            snippets.js(url, plain)
            + "const data = await response.json();\nconsole.log(data.choices[0].message.content);\n",
        ),
        snippets.Snippet("JavaScript (streaming)", "javascript", snippets.js(url, streamed) + JS_STREAM),
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
    call = f"client.chat.completions.create(\n{snippets.py_kwargs(known)})\n"
    head = snippets.openai_head(base_url)
    if not stream:
        return head + f"response = {call}print(response.choices[0].message.content)\n"
    return (
        head + f"stream = {call}for chunk in stream:\n"
        "    if chunk.choices and chunk.choices[0].delta.content:\n"
        '        print(chunk.choices[0].delta.content, end="", flush=True)\n'
        "print()\n"
    )
