"""View code: the pieces every kind's snippets are made of (each kind builds its own, in its app's sharing.py).

The key is read from the PLAYGROUND_API_KEY environment variable, never written into a snippet. Python uses the
openai SDK where the endpoint is OpenAI's, httpx otherwise. JavaScript is fetch for Node 18+ (an ES module:
top-level await).
"""

import json
from dataclasses import dataclass
from pprint import pformat

KEY_VARIABLE = "PLAYGROUND_API_KEY"
HEREDOC = "PLAYGROUND_JSON"


@dataclass
class Snippet:
    label: str
    language: str
    code: str


def json_text(body) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False)


def py(value, indent: int = 4) -> str:
    text = pformat(value, sort_dicts=False, width=100)
    return text.replace("\n", "\n" + " " * indent)


def py_kwargs(items: dict, indent: int = 4) -> str:
    pad = " " * indent
    return "".join(f"{pad}{name}={py(value, indent)},\n" for name, value in items.items())


def endpoint(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + "/" + path


def curl_json(url: str, body: dict, *, stream: bool = False, output: str = "") -> str:
    flags = " -N" if stream else ""
    out = f" \\\n  --output {output}" if output else ""
    return (
        f"curl -sS --fail-with-body{flags} {url} \\\n"
        f'  -H "Authorization: Bearer ${KEY_VARIABLE}" \\\n'
        f'  -H "Content-Type: application/json"{out} \\\n'
        f"  -d @- <<'{HEREDOC}'\n{json_text(body)}\n{HEREDOC}\n"
    )


AUTH_JS = f"Authorization: `Bearer ${{process.env.{KEY_VARIABLE}}}`"


def js(url: str, body: dict) -> str:
    payload = json_text(body).replace("\n", "\n  ")
    return (
        f"const response = await fetch({json.dumps(url)}, {{\n"
        '  method: "POST",\n'
        f'  headers: {{ {AUTH_JS}, "Content-Type": "application/json" }},\n'
        f"  body: JSON.stringify({payload}),\n"
        "});\n"
        "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);\n"
    )


HTTPX_HEAD = (
    f'import os\n\nimport httpx\n\nheaders = {{"Authorization": f"Bearer {{os.environ[\'{KEY_VARIABLE}\']}}"}}\n'
)


def openai_head(base_url: str) -> str:
    """The Python lines that make an openai SDK client for `base_url`."""
    return (
        "import os\n\nfrom openai import OpenAI\n\n"
        f'client = OpenAI(base_url={base_url!r}, api_key=os.environ["{KEY_VARIABLE}"])\n'
    )


def base_url_for(request, connection) -> str:
    """The connection's base URL; the Local one as the absolute address this playground is reached at."""
    if connection is None or connection.is_local:
        return request.build_absolute_uri("/local/v1")
    return connection.base_url
