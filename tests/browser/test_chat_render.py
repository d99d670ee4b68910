"""Live markdown and math in Chromium: the unfinished tail renders while it streams, sanitized like the final."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.test_chat import DONE, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

FILLER = " ".join(f"word{i}" for i in range(400))


def test_bold_renders_in_the_tail_before_the_answer_finishes(open_chat):
    page = open_chat()
    answer = send(page, f"Go [say:Start with **bold words** here and then {FILLER} end.]")
    # The paragraph has no blank line, so it stays the unfinished tail until the answer ends.
    page.wait_for_function(
        "node => node.dataset.status === 'streaming' && node.querySelector('.tail strong') !== null",
        arg=answer.element_handle(),
        timeout=DONE,
    )
    expect(answer.locator(".tail strong")).to_have_text("bold words")
    assert answer.get_attribute("data-status") == "streaming"
    assert "**" not in answer.locator(".tail").inner_text()
    screenshot(page, "chat-live-markdown")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".blocks strong")).to_have_text("bold words")
    expect(answer.locator(".tail")).to_be_empty()


def test_math_is_typeset_and_cannot_inject_script(open_chat):
    page = open_chat()
    dialogs, console = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    text = (
        r"Euler: $e^{i\pi}+1=0$ and $\href{javascript:alert(1)}{click}$ and $\url{javascript:alert(2)}$ "
        r"and $<img src=x onerror=alert(3)>$ and $\htmlClass{x}{y}$."
        "\n\n"
        r"$$\int_0^1 x\,dx = \frac12$$"
        "\n\n"
        "```html\n<script>alert(4)</script> $x$\n```"
    )
    answer = send(page, f"Math [say:{text}]")
    page.wait_for_function(
        "node => node.querySelectorAll('.tail .katex, .blocks .katex').length > 0", arg=answer.element_handle()
    )
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    body = answer.locator(".message-body")
    expect(body.locator(".math-inline .katex").first).to_be_visible()
    expect(body.locator(".math-display .katex-display")).to_have_count(1)
    # The code block keeps its dollars as code.
    expect(body.locator("pre code")).to_contain_text("$x$")
    assert page.locator("#thread script").count() == 0
    assert page.locator("#thread img").count() == 0
    assert (
        page.locator(
            '#thread .message-body [href^="javascript"], #thread .message-body [href]:not([href^="http"])'
        ).count()
        == 0
    )
    assert page.locator("#thread [onerror], #thread [onclick]").count() == 0
    page.wait_for_timeout(200)
    assert dialogs == []
    # The vendored KaTeX fonts load from our own origin under the page's CSP.
    page.wait_for_function(
        "() => Array.from(document.fonts).some(f => f.family.replace(/\"/g, '') === 'KaTeX_Main' && f.status === 'loaded')"
    )
    assert [line for line in console if "Content Security Policy" in line] == []
    screenshot(page, "chat-math")
    page.get_by_role("button", name="Toggle dark mode").click()
    page.set_viewport_size({"width": 390, "height": 844})
    answer.scroll_into_view_if_needed()
    screenshot(page, "chat-math-dark-phone")


def test_the_live_render_is_sanitized_like_the_server_render(open_chat):
    """The client's renderer, given hostile markdown, keeps only what the server's allow-list keeps."""
    page = open_chat()
    page.wait_for_function("() => window.ChatMarkdown !== undefined")
    hostile = (
        "<script>alert(1)</script> [a](javascript:alert(1)) [b](/relative) ![i](http://x.test/i.png) "
        '<img src=x onerror=alert(1)> **ok** `code` [c](https://example.com "t")\n\n'
        "| a | b |\n|:-|-:|\n| 1 | 2 |\n\n```python\nprint(1)\n```\n\n![d](data:image/png;base64,iVBORw0KGgo=)"
    )
    html = page.evaluate("text => window.ChatMarkdown.render(text)", hostile)
    assert "<script" not in html and "<img src=x" not in html and 'onerror="' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and 'href="javascript' not in html
    assert 'href="/relative"' not in html
    assert '<a href="https://example.com" title="t" rel="noopener noreferrer nofollow" target="_blank">c</a>' in html
    assert 'class="image-placeholder" data-src="http://x.test/i.png"' in html
    assert "<strong>ok</strong>" in html and "<code>code</code>" in html
    assert 'style="text-align:left"' in html and 'style="text-align:right"' in html
    assert '<code class="language-python">print(1)\n</code>' in html
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in html


SAME_AS_SERVER = [
    "Plain *em* **strong** ~~gone~~ `code` and a [link](https://example.com/a?b=1&c=2 'title').",
    "<script>alert(1)</script> <img src=x onerror=alert(1)> [a](javascript:alert(1)) [b](/relative) [m](mailto:a@b.c)",
    "# Head\n\n> quote with **bold**\n\n1. one\n2. two\n   - nested $x^2$\n\n---",
    "| left | right | centre |\n|:--|--:|:-:|\n| 1 | 2 | 3 |\n| *a* | `b` | $c$ |",
    "```\n<b>not bold</b> $x$\n```\n\n    indented code",
    "![remote](https://example.com/i.png) ![data](data:image/png;base64,iVBORw0KGgo=) ![svg](data:image/svg+xml;base64,AAAA)",
    "Math $e^{i\\pi}$, $$\\int x$$, and $5 and $6.\n\n$$\n\\frac{a}{b}\n$$",
]


def canonical(html: str) -> list:
    """Tags with sorted attributes and text, whitespace between tags ignored: equal for equivalent markup."""
    from html.parser import HTMLParser

    tokens = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tokens.append(("start", tag, tuple(sorted(attrs))))

        def handle_endtag(self, tag):
            tokens.append(("end", tag))

        def handle_data(self, data):
            if data.strip():
                tokens.append(("text", " ".join(data.split())))

    Parser(convert_charrefs=True).feed(html)
    return tokens


def test_the_live_render_equals_the_server_render(open_chat):
    from playground.lib.markdown.rendering import render_markdown

    page = open_chat()
    page.wait_for_function("() => window.ChatMarkdown !== undefined")
    for text in SAME_AS_SERVER:
        live = page.evaluate("text => window.ChatMarkdown.render(text)", text)
        assert canonical(live) == canonical(render_markdown(text)), text


def test_text_streamed_between_renders_never_goes_into_a_closed_bold_word(open_chat):
    page = open_chat()
    page.wait_for_function("() => window.ChatMarkdown !== undefined")
    # Two tails within one render interval: the second is appended as text, not rendered again yet.
    html = page.evaluate(
        """() => {
            const tail = document.createElement("div");
            document.body.appendChild(tail);
            ChatMarkdown.renderTail(tail, "I am **local/chat** and");
            ChatMarkdown.renderTail(tail, "I am **local/chat** and long texts");
            return tail.innerHTML;
        }"""
    )
    assert "<strong>local/chat</strong>" in html
    assert html.strip().endswith("</strong> and long texts</p>")
