"""LaTeX math in answers: kept as escaped TeX in math spans (KaTeX typesets them in the browser), never markup."""

import random

import pytest

from playground.lib.markdown.rendering import BlockRenderer, _cleaner, render_markdown


def test_inline_and_display_math_become_math_elements_holding_the_tex():
    html = render_markdown("Euler: $e^{i\\pi}+1=0$.\n\n$$\n\\int_0^1 x\\,dx\n$$\n\nAnd $$a^2$$ inline.")
    assert '<span class="math math-inline">e^{i\\pi}+1=0</span>' in html
    assert '<div class="math math-display">\\int_0^1 x\\,dx</div>' in html
    assert '<span class="math math-display">a^2</span>' in html


@pytest.mark.parametrize(
    "text",
    [
        "It costs $5 and $10 today.",  # dollars, not math
        "A $ sign alone.",
        "\\$x$ escaped",
        "`$x$` in code",
        "$x$5 a digit after the closing dollar",
        "$ x$ a space after the opening dollar",
        "$$\nunclosed display",
    ],
)
def test_text_that_is_not_math_stays_text(text):
    assert "math" not in render_markdown(text)


def test_math_does_not_break_emphasis_inside_it():
    html = render_markdown("$a_1 * b_2 * c$ and *em*")
    assert '<span class="math math-inline">a_1 * b_2 * c</span>' in html
    assert "<em>em</em>" in html


@pytest.mark.parametrize(
    "tex",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "\\href{javascript:alert(1)}{x}",
        '</span><a href="javascript:alert(1)">x</a>',
        "\\htmlData{onclick=alert(1)}{x}",
    ],
)
@pytest.mark.parametrize("wrap", ["${}$", "$${}$$", "$$\n{}\n$$"])
def test_no_markup_can_come_through_math(tex, wrap):
    html = render_markdown("Before " + wrap.format(tex) + " after" if "\n" not in wrap else wrap.format(tex))
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert html.count("<span") + html.count("<div") == html.count('class="math')
    # Whatever the TeX, the sanitizer changes nothing: the renderer emitted only allowed markup.
    assert _cleaner.clean(html) == html


def test_code_blocks_keep_dollars_as_code():
    html = render_markdown("```python\nprice = '$5 and $6$'\n```")
    assert "math" not in html


def test_math_classes_are_the_only_ones_allowed_on_spans_and_divs_besides_code_ones():
    dirty = '<span class="math math-inline evil">x</span><div class="math-display other">y</div>'
    assert _cleaner.clean(dirty) == '<span class="math math-inline">x</span><div class="math-display">y</div>'


def test_block_by_block_rendering_with_math_equals_rendering_the_whole():
    text = "Intro $a+b$ text.\n\n$$\n\\sum_{i=1}^n i\n$$\n\nMore $$x$$ and $y$.\n\n- item $z$\n"
    whole = render_markdown(text)
    rng = random.Random(7)
    for _ in range(20):
        renderer, parts, position = BlockRenderer(), [], 0
        while position < len(text):
            size = rng.randint(1, 12)
            parts.extend(renderer.feed(text[position : position + size])[0])
            position += size
        parts.append(renderer.finish())
        assert "".join(parts) == whole
