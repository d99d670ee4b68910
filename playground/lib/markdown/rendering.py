"""Model output -> safe HTML: markdown, highlighted code, sanitizing, and an incremental block renderer.

Model output is untrusted. markdown-it runs with raw HTML disabled, and everything it produces still goes
through nh3, so a bug in a render rule cannot open a hole. Remote images are never loaded without consent:
they become a button that holds the URL and loads it on click (static/js/chat/messages.js). Raster data: images are
shown inline, since they make no request.
"""

import re
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from playground.lib.markdown.highlighting import TOKEN_CLASSES, highlight
from playground.lib.markdown.math import math_plugin

# Markdown
_LANGUAGE_NAME = re.compile(r"^[\w#+.-]{1,32}$")


def _code_block(code: str, language: str) -> str:
    label = escapeHtml(language) if language else "text"
    code_class = f' class="language-{escapeHtml(language)}"' if language else ""
    return (
        f'<div class="code-block"><div class="code-head"><span class="code-lang">{label}</span>'
        f'<button type="button" class="copy-button" data-copy-code="">Copy</button></div>'
        # Focusable: a code block scrolls sideways, and a keyboard must be able to scroll it (WCAG 2.1.1).
        f'<pre tabindex="0"><code{code_class}>{highlight(code, language)}</code></pre></div>\n'
    )


def _render_fence(self, tokens, idx, options, env):
    token = tokens[idx]
    info = token.info.strip().split(maxsplit=1)
    language = info[0] if info and _LANGUAGE_NAME.match(info[0]) else ""
    return _code_block(token.content, language)


def _render_code_block(self, tokens, idx, options, env):
    return _code_block(tokens[idx].content, "")


def _render_image(self, tokens, idx, options, env):
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = self.renderInlineAsText(token.children or [], options, env)
    if _DATA_IMAGE.match(src):
        return f'<img src="{escapeHtml(src)}" alt="{escapeHtml(alt)}">'
    parts = urlsplit(src)
    if parts.scheme not in ("http", "https"):
        return escapeHtml(alt)
    label = f"Load image: {alt}" if alt else "Load image"
    return (
        f'<button type="button" class="image-placeholder" data-src="{escapeHtml(src)}" '
        f'title="{escapeHtml(src)}">{escapeHtml(label)} <span class="image-host">({escapeHtml(parts.netloc)})</span>'
        "</button>"
    )


_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"]).use(math_plugin)
_md.add_render_rule("fence", _render_fence)
_md.add_render_rule("code_block", _render_code_block)
_md.add_render_rule("image", _render_image)

# Sanitizing
_DATA_IMAGE = re.compile(r"^data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$", re.IGNORECASE)
_CODE_CLASS = re.compile(r"^language-[\w#+.-]{1,32}$")
_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "img", "table", "thead", "tbody", "tr", "th", "td", "span", "div", "button",
}  # fmt: skip


def _filter_attribute(tag: str, name: str, value: str) -> str | None:
    if tag == "code" and name == "class":
        return value if _CODE_CLASS.match(value) else None
    if tag == "a" and name == "href":
        return value if urlsplit(value).scheme in ("http", "https", "mailto") else None
    if tag == "img" and name == "src":
        return value if _DATA_IMAGE.match(value) else None
    if tag == "button" and name == "data-src":
        return value if urlsplit(value).scheme in ("http", "https") else None
    if name == "tabindex":
        return "0" if tag == "pre" else None
    return value


_cleaner = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "style"},
    attributes={
        "a": {"href", "title"},
        "img": {"src", "alt", "title"},
        "code": {"class"},
        "ol": {"start"},
        "th": {"style"},
        "td": {"style"},
        "pre": {"tabindex"},
        "button": {"type", "data-src", "data-copy-code", "title"},
    },
    allowed_classes={
        "span": TOKEN_CLASSES | {"code-lang", "image-host", "math", "math-inline", "math-display"},
        "div": {"code-block", "code-head", "math", "math-display"},
        "button": {"copy-button", "image-placeholder"},
    },
    filter_style_properties={"text-align"},
    attribute_filter=_filter_attribute,
    link_rel="noopener noreferrer nofollow",
    set_tag_attribute_values={"a": {"target": "_blank"}},
    url_schemes={"http", "https", "mailto", "data"},
    url_relative="deny",
)


def render_markdown(text: str) -> str:
    """Markdown (CommonMark + tables + strikethrough) as sanitized HTML."""
    if not text:
        return ""
    return _cleaner.clean(_md.render(text))


# Incremental rendering
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"^(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def _starts_new_block(line: str) -> bool:
    """After a blank line, can this line not belong to the block before it?

    An indented line may continue a list item or an indented code block, and a list marker may continue a loose
    list, so neither ends a block; merging never changes the result, only splitting can.
    """
    return bool(line) and line[0] not in " \t" and not _LIST_ITEM.match(line)


class BlockRenderer:
    """Renders a growing markdown text block by block, so each delta costs only its own block.

    `feed()` returns the HTML of blocks that just finished and the raw text of the unfinished one (the tail).
    Blocks end at blank lines outside fenced code, once the next line shows that a new block begins. The HTML
    of all blocks, joined, equals `render_markdown()` of the whole text (reference-style link definitions,
    which can affect earlier blocks, are the known exception).
    """

    def __init__(self):
        self._block: list[str] = []  # complete lines of the unfinished block
        self._partial = ""  # the last, incomplete line
        self._fence: tuple[str, int] | None = None
        self._after_blank = False

    def feed(self, text: str) -> tuple[list[str], str]:
        finished = []
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            html = self._line(line)
            if html is not None:
                finished.append(html)
        # A partial line long enough to be judged can close the block before it, so the block shows sooner.
        if self._after_blank and len(self._partial.lstrip()) >= 12 and _starts_new_block(self._partial):
            finished.append(self._flush())
        return finished, self.tail

    @property
    def tail(self) -> str:
        return "".join(self._block) + self._partial

    def finish(self) -> str:
        text = self.tail
        self._block, self._partial, self._fence, self._after_blank = [], "", None, False
        return render_markdown(text)

    def _flush(self) -> str:
        html = render_markdown("".join(self._block))
        self._block = []
        self._after_blank = False
        return html

    def _line(self, line: str) -> str | None:
        html = None
        if self._fence is not None:
            char, length = self._fence
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) < 4
                and stripped.startswith(char * length)
                and not stripped.strip(char)
            ):
                self._fence = None
        elif not line.strip():
            if any(part.strip() for part in self._block):
                self._after_blank = True
        else:
            if self._after_blank and _starts_new_block(line):
                html = self._flush()
            self._after_blank = False
            match = _FENCE_OPEN.match(line)
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                self._fence = (match.group(1)[0], len(match.group(1)))
        self._block.append(line + "\n")
        return html
