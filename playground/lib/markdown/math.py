"""LaTeX math in markdown: `$…$` inline, `$$…$$` inline or as a block of its own lines.

The TeX source is kept as escaped text in `<span class="math math-inline">` or `<div class="math math-display">`;
KaTeX typesets it in the browser (static/js/chat/markdown.js, with `trust` off, so no `\\href`, `\\url` or
`\\html…` can make a link or an attribute). Nothing here emits markup from the source. static/js/chat/markdown.js
has the same rules for the live render of a streaming answer; keep them in step.

Inline `$…$` follows Pandoc: the opening `$` is not followed by a space, the closing one not preceded by a
space nor followed by a digit, so "$5 and $10" stays text. Unclosed math stays text (a streaming answer shows
it as text until its closing `$` arrives).
"""

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline

MAX_MATH = 4000  # longer "math" is left as text: KaTeX's time grows with it


def _closing(src: str, start: int, end: int, delimiter: str) -> int:
    """Index of the closing delimiter from `start`, skipping backslash escapes; -1 when there is none."""
    pos = start
    while pos < end:
        char = src[pos]
        if char == "\\":
            pos += 2
            continue
        if src.startswith(delimiter, pos):
            return pos
        pos += 1
    return -1


def _inline(state: StateInline, silent: bool) -> bool:
    src, pos, end = state.src, state.pos, state.posMax
    if src[pos] != "$":
        return False
    if src.startswith("$$", pos):
        close = _closing(src, pos + 2, end, "$$")
        content = src[pos + 2 : close] if close >= 0 else ""
        if close < 0 or not content.strip() or len(content) > MAX_MATH:
            return False
        if not silent:
            token = state.push("math_inline_display", "span", 0)
            token.content = content.strip()
        state.pos = close + 2
        return True
    if pos + 1 >= end or src[pos + 1] in " \t\n":
        return False
    close = _closing(src, pos + 1, end, "$")
    if close < 0 or src[close - 1] in " \t\n" or (close + 1 < end and src[close + 1].isdigit()):
        return False
    content = src[pos + 1 : close]
    if len(content) > MAX_MATH:
        return False
    if not silent:
        token = state.push("math_inline", "span", 0)
        token.content = content
    state.pos = close + 1
    return True


def _block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    begin = state.bMarks[start_line] + state.tShift[start_line]
    maximum = state.eMarks[start_line]
    if state.sCount[start_line] - state.blkIndent >= 4 or not state.src.startswith("$$", begin):
        return False
    first = state.src[begin + 2 : maximum].rstrip()
    line = start_line
    if first.endswith("$$"):
        content = first[:-2]  # $$ … $$ on one line
    else:
        parts = [first]
        while True:
            line += 1
            if line >= end_line:
                return False  # unclosed: not math (yet)
            text = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]].rstrip()
            if not text:
                return False  # a blank line ends the block: math has none
            if text.endswith("$$"):
                parts.append(text[:-2])
                break
            parts.append(text)
        content = "\n".join(parts)
    if not content.strip() or len(content) > MAX_MATH:
        return False
    if silent:
        return True
    state.line = line + 1
    token = state.push("math_block", "div", 0)
    token.block = True
    token.content = content.strip()
    token.map = [start_line, state.line]
    return True


def render_inline(self, tokens, idx, options, env) -> str:
    return f'<span class="math math-inline">{escapeHtml(tokens[idx].content)}</span>'


def render_inline_display(self, tokens, idx, options, env) -> str:
    # A span (shown as a block by CSS): a div cannot sit inside the paragraph.
    return f'<span class="math math-display">{escapeHtml(tokens[idx].content)}</span>'


def render_block(self, tokens, idx, options, env) -> str:
    return f'<div class="math math-display">{escapeHtml(tokens[idx].content)}</div>\n'


def math_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.before("escape", "math_inline", _inline)
    md.block.ruler.before("fence", "math_block", _block, {"alt": ["paragraph", "reference", "blockquote", "list"]})
    md.add_render_rule("math_inline", render_inline)
    md.add_render_rule("math_inline_display", render_inline_display)
    md.add_render_rule("math_block", render_block)
