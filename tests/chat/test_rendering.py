import html as html_lib
import random
import re
from pathlib import Path

import pytest
from django.conf import settings

from playground.lib.markdown.highlighting import TOKEN_CLASSES, highlight, stylesheet
from playground.lib.markdown.rendering import BlockRenderer, _cleaner, render_markdown


def test_script_tags_are_shown_as_text_never_as_elements():
    html = render_markdown("Hello <script>alert(1)</script> world")
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_event_handler_attributes_never_survive():
    html = render_markdown('<img src=x onerror="alert(1)"> and <a href="#" onclick="x()">a</a>')
    assert "<img" not in html
    assert "<a " not in html
    assert "onerror=" in html  # as escaped text only
    assert not re.search(r"<[^>]+\son\w+=", html)


def test_javascript_links_are_dropped():
    html = render_markdown("[click](javascript:alert(1)) and [also](JAVASCRIPT:alert(2))")
    assert 'href="javascript' not in html.lower()
    assert "<a " not in html


def test_links_open_in_a_new_tab_without_referrer():
    html = render_markdown("[docs](https://example.com/docs)")
    assert 'href="https://example.com/docs"' in html
    assert 'target="_blank"' in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_relative_links_lose_their_target():
    html = render_markdown("[admin](/admin/)")
    assert "href" not in html


def test_remote_images_are_not_loaded_but_offered_behind_a_button():
    html = render_markdown("![a cat](https://images.example/cat.png)")
    assert "<img" not in html
    assert 'data-src="https://images.example/cat.png"' in html
    assert "Load image: a cat" in html
    assert "images.example" in html


def test_raster_data_images_are_shown_inline():
    html = render_markdown("![dot](data:image/png;base64,iVBORw0KGgo=)")
    assert '<img src="data:image/png;base64,iVBORw0KGgo=" alt="dot">' in html


def test_svg_data_images_and_other_schemes_are_not_loaded():
    html = render_markdown("![x](data:image/svg+xml;base64,PHN2Zz4=) ![y](ftp://host/a.png)")
    assert "<img" not in html
    assert "data-src" not in html


def test_tables_render_with_alignment():
    html = render_markdown("| name | score |\n|:--|--:|\n| a | 0.9 |\n")
    assert "<table>" in html
    assert '<th style="text-align:left">name</th>' in html
    assert '<td style="text-align:right">0.9</td>' in html


def test_strikethrough():
    assert "<s>gone</s>" in render_markdown("~~gone~~")


def test_code_blocks_keep_their_language_class_highlighting_and_a_copy_button():
    html = render_markdown('```python\ndef f():\n    return "hi"  # note\n```\n')
    assert '<code class="language-python">' in html
    assert '<span class="tok-k">def</span>' in html
    assert '<span class="tok-nf">f</span>' in html
    assert '<span class="tok-s2">"hi"</span>' in html
    assert '<span class="tok-c1"># note</span>' in html
    assert 'class="copy-button" data-copy-code=""' in html


def test_a_script_inside_a_code_block_stays_inert_text():
    for language in ("js", "html", "python", ""):
        html = render_markdown(f'```{language}\nconst s = "<script>alert(1)</script>";\n```\n')
        assert "<script" not in html, language
        assert "&lt;script&gt;" in html or "&lt;</span>" in html, language
    assert '<span class="tok-kd">const</span>' in render_markdown("```js\nconst a = 1;\n```\n")


def test_a_hostile_language_name_cannot_inject_classes():
    html = render_markdown('```x" onclick="alert(1)\ncode\n```\n')
    assert "onclick" not in html.split('<pre tabindex="0">')[1].split(">")[0]
    assert "<code>" in html


@pytest.mark.parametrize(
    ("language", "code", "expected"),
    [
        ("python", "import os\n", '<span class="tok-kn">import</span>'),
        ("js", "function f() { return 42 }\n", '<span class="tok-mf">42</span>'),
        ("javascript", "// hi\n", '<span class="tok-c1">// hi</span>'),
        ("json", '{"a": true}\n', '<span class="tok-kc">true</span>'),
        ("json", '{"a": true}\n', '<span class="tok-nt">"a"</span>'),
        ("bash", "echo $HOME # hi\n", '<span class="tok-c1"># hi</span>'),
        ("sh", "echo $HOME\n", '<span class="tok-nv">$HOME</span>'),
        ("sql", "SELECT 1 -- one\n", '<span class="tok-k">SELECT</span>'),
        ("rust", "fn main() {}\n", '<span class="tok-nf">main</span>'),
    ],
)
def test_highlighting_covers_common_languages(language, code, expected):
    html = render_markdown(f"```{language}\n{code}```\n")
    assert expected in html


def test_highlighting_keeps_the_text_and_only_adds_spans():
    code = 'x = {"a": [1, 2.5]}  # <b>&</b>\n\n\nprint(x)\n'
    html = highlight(code, "python")
    assert html_lib.unescape(re.sub(r"</?span[^>]*>", "", html)) == code
    assert highlight("a < b", "python").endswith('<span class="tok-n">b</span>')


def test_unknown_or_missing_languages_are_only_escaped():
    assert highlight("a < b & c", "not-a-language") == "a &lt; b &amp; c"
    assert highlight("a < b", "") == "a &lt; b"
    html = render_markdown("```\ndef f(): pass\n```\n")
    assert '<span class="tok-' not in html
    assert "def f(): pass" in html


def test_the_sanitizer_allows_exactly_the_token_classes_pygments_emits():
    from pygments.token import STANDARD_TYPES

    assert {f"tok-{name}" for name in STANDARD_TYPES.values() if name} == TOKEN_CLASSES
    # A class outside the list is dropped, even on a span.
    html = render_markdown("```python\nx\n```\n").replace("tok-n", "tok-evil")
    assert "tok-evil" not in _cleaner.clean(html)


def test_the_committed_stylesheet_is_the_generated_one():
    assert (Path(settings.BASE_DIR) / "static/css/highlight.css").read_text() == stylesheet()
    css = stylesheet()
    for token_class in ("tok-k", "tok-s2", "tok-c1", "tok-nf", "tok-mi"):
        assert css.count(f".{token_class} ") == 4  # light and dark, chosen and automatic


SAMPLES = {
    "paragraphs": "First paragraph with **bold** and `code`.\n\nSecond one\nspans two lines.\n\nThird.",
    "headings": "# Title\n\nIntro text.\n\n## Section\n\nBody.\n\n---\n\nAfter a rule.\n",
    "tight list": "Steps:\n\n- one\n- two\n- three\n\nDone.",
    "loose list": "1. first\n\n2. second\n\n   still second\n\n3. third\n\nAfter.",
    "nested list": "- a\n  - b\n\n    more b\n- c\n\nEnd.",
    "code fence with blank lines": (
        "Here:\n\n```python\nimport os\n\n\ndef f():\n    pass\n\n# end\n```\n\nAnd after.\n"
    ),
    "tilde fence": "~~~\na\n\nb\n~~~\n\ntext",
    "unclosed fence": "Text\n\n```js\nlet a = 1;\n\nlet b = 2;",
    "indented code": "Para\n\n    code line 1\n\n    code line 2\n\nPara 2",
    "table": "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nBelow the table.\n\n| c |\n|:-:|\n| x |\n",
    "blockquote": "> quoted\n> more\n\n> second quote\n\nplain",
    "long answer": "\n\n".join(
        [
            "## Overview",
            "The **relay** streams tokens as they arrive; each finished block is rendered once.",
            "- point one\n- point two with `code`\n- point three",
            "```bash\npip install thing\n\nthing --run\n```",
            "| metric | value |\n|---|---:|\n| ttft | 12 ms |\n| tokens/s | 480 |",
            "1. ordered\n2. list",
            "> a quote with a [link](https://example.com)",
            "Final words with ~~strike~~ and an image ![x](https://img.example/x.png).",
        ]
        * 6
    ),
}


def render_in_chunks(text: str, sizes) -> str:
    renderer = BlockRenderer()
    parts = []
    position = 0
    for size in sizes:
        if position >= len(text):
            break
        blocks, _tail = renderer.feed(text[position : position + size])
        parts.extend(blocks)
        position += size
    if position < len(text):
        blocks, _tail = renderer.feed(text[position:])
        parts.extend(blocks)
    parts.append(renderer.finish())
    return "".join(parts)


@pytest.mark.parametrize("name", SAMPLES)
def test_block_by_block_rendering_equals_rendering_the_whole(name):
    text = SAMPLES[name]
    whole = render_markdown(text)
    rng = random.Random(name)
    for sizes in ([1] * len(text), [3] * len(text), [rng.randint(1, 40) for _ in text], [len(text)]):
        assert render_in_chunks(text, sizes) == whole


def test_finished_blocks_are_emitted_while_the_text_grows():
    renderer = BlockRenderer()
    blocks, tail = renderer.feed("First paragraph.\n\nSecond")
    assert blocks == []  # "Second" is too short to know whether it starts a new block
    assert tail == "First paragraph.\n\nSecond"
    blocks, tail = renderer.feed(" paragraph goes on.\n\n")
    assert blocks == ["<p>First paragraph.</p>\n"]
    assert tail == "Second paragraph goes on.\n\n"
    blocks, tail = renderer.feed("- item")
    assert blocks == []  # a list item may continue a loose list
    blocks, tail = renderer.feed("\n\nThird block begins here.")
    assert blocks == ["<p>Second paragraph goes on.</p>\n<ul>\n<li>item</li>\n</ul>\n"]
    assert tail == "Third block begins here."
    assert renderer.finish() == "<p>Third block begins here.</p>\n"


def test_blank_lines_inside_a_code_fence_do_not_split_it():
    renderer = BlockRenderer()
    blocks, tail = renderer.feed("```\nline one\n\nline two\n\nline three here\n")
    assert blocks == []
    assert tail.startswith("```")
    blocks, _ = renderer.feed("```\n\nAfter the code block.\n")
    assert len(blocks) == 1
    assert "line one\n\nline two" in blocks[0]


def test_the_tail_is_raw_text_never_html():
    renderer = BlockRenderer()
    _, tail = renderer.feed("<script>alert(1)</script> **not yet bold")
    assert tail == "<script>alert(1)</script> **not yet bold"


def test_blocks_from_the_renderer_are_sanitized():
    renderer = BlockRenderer()
    blocks, _ = renderer.feed("[x](javascript:alert(1)) <b onmouseover=alert(1)>hi</b>\n\nnext paragraph here\n")
    assert "javascript:" not in blocks[0].split("[x]")[0]
    assert "<b" not in blocks[0]
