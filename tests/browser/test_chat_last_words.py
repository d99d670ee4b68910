"""The end of an answer in the asking tab (issue 36): what the page's own renderer shows stays on screen; only a
block the server renders differently (a highlighted code block) is put in its place, and the body ends exactly as
a reload of the saved answer shows it."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.test_chat import DONE, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

FILLER = " ".join(f"word{i}" for i in range(60))

# Wraps the end of the answer (articles.js: the page finishes a complete answer it watched from the `done` event's
# last words and data) to see what it did to the body: which of the nodes shown just before it are still in the
# same body after it, and which nodes it took out of the page for good.
WATCH = """() => {
  var real = window.ChatArticles.finish;
  window.__ends = [];
  window.ChatArticles.finish = function (article, data) {
    var body = article.querySelector(".message-body");
    var shown = Array.from(body.querySelectorAll(".blocks > *, .tail > *"));
    var code = body.querySelector(".tail code");
    var observer = new MutationObserver(function () {});
    observer.observe(body, { childList: true, subtree: true });
    var result = real(article, data);
    var removed = [];
    observer.takeRecords().forEach(function (record) {
      record.removedNodes.forEach(function (node) { if (node.nodeType === 1 && !body.contains(node)) removed.push(node.outerHTML); });
    });
    observer.disconnect();
    var now = result.article.querySelector(".message-body");
    window.__ends.push({
      sameBody: now === body,
      before: shown.length,
      codeStayed: code ? body.contains(code) : null,
      stayed: shown.filter(function (node) { return body.contains(node); }).length,
      removed: removed,
      tail: now.querySelector(".tail").childNodes.length,
    });
    return result;
  };
}"""


def blocks_html(answer) -> str:
    html = answer.locator(".message-body .blocks").inner_html()
    return re.sub(r">\s+<", "><", html).strip()


def finish_and_reload(page, text: str) -> tuple[dict, str, str]:
    page.wait_for_function("() => window.ChatArticles && window.ChatMarkdown")
    page.evaluate(WATCH)
    answer = send(page, f"Go [say:{text}]")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    page.wait_for_function("() => window.__ends.length === 1")
    end = page.evaluate("window.__ends[0]")
    stats = page.evaluate("window.ChatClient.stats")
    page.wait_for_function("node => !node.querySelector('.math:not([data-tex])')", arg=answer.element_handle())
    live = blocks_html(answer)
    page.reload()
    reloaded = page.locator('article[data-role="assistant"]').last
    page.wait_for_function("node => !node.querySelector('.math:not([data-tex])')", arg=reloaded.element_handle())
    return {**end, **stats}, live, blocks_html(reloaded)


def test_the_last_words_stay_as_the_page_rendered_them(open_chat):
    page = open_chat()
    text = (
        f"Intro with **bold** {FILLER}.\n\n```python\nprint(1)\n```\n\n"
        r"Then $e^{i\pi}+1=0$ and more." + "\n\n- one item\n- two with *emphasis* and $x^2$\n- three"
    )
    end, live, reloaded = finish_and_reload(page, text)
    for _ in range(2):
        if end["before"] >= 3:
            break
        # On a loaded machine the end can come before the page showed the list (the last deltas and the end in one
        # frame): nothing of what this test is about happened; a new conversation asks again.
        page = open_chat()
        end, live, reloaded = finish_and_reload(page, text)
    # The final render kept the body and every element it showed (none left the page): the tail's list, with its
    # typeset math, moved to the blocks as it was, changed only where the last words had come after its render.
    assert end["sameBody"] and end["removed"] == [], end
    assert end["before"] >= 3 and end["stayed"] == end["before"], end
    assert end["patched"] == 1 and end["replaced"] == 0 and end["tail"] == 0, end
    # Exactly the saved answer, as a reload shows it: the highlighted code block, the list, the math.
    assert live == reloaded
    assert "<li>two with <em>emphasis</em> and" in live and 'class="katex"' in live and "tok-" in live
    page.locator('article[data-role="assistant"]').last.scroll_into_view_if_needed()
    screenshot(page, "chat-last-words")
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator('article[data-role="assistant"] .message-body ul').last.scroll_into_view_if_needed()
    screenshot(page, "chat-last-words-phone")


def test_a_code_block_at_the_end_gains_its_highlighting_in_place(open_chat):
    page = open_chat()
    text = f"Intro {FILLER}.\n\n- a list\n- before\n\n```python\ndef f(x):\n    return x * 2\n```"
    end, live, reloaded = finish_and_reload(page, text)
    for _ in range(2):
        if end["codeStayed"] is not None:
            break
        page = open_chat()  # the end came before the page showed the code block (a loaded machine): again
        end, live, reloaded = finish_and_reload(page, text)
    # The page showed the code unhighlighted (markdown.js does not highlight); the server's render differs only
    # inside the code element, which stays, as every other element shown does.
    assert end["sameBody"] and end["removed"] == [] and end["codeStayed"] is True, end
    assert end["stayed"] == end["before"] and end["patched"] == 1 and end["changedNodes"] >= 1, end
    assert live == reloaded and "tok-" in live


# The page's articles without what differs between two renders of the same rows (the CSRF token's mask) and the
# whitespace between elements.
ARTICLES = """() => Array.from(document.querySelectorAll('#message-list article[data-message-id]')).map(function (a) {
  return a.outerHTML.replace(/name="csrfmiddlewaretoken" value="[^"]*"/g, "").replace(/>\\s+</g, "><").trim();
})"""


def test_a_150_word_answer_ends_with_its_last_words_and_no_swap_of_its_body(open_chat):
    """Sent over the socket: the page builds the question and the placeholder from the `sent` reply's data and
    finishes the answer from its `done` (no article in it): the body it showed stays, every element of it, and
    the thread is then the one a reload renders, actions and footer included."""
    page = open_chat()
    page.wait_for_function("() => window.ChatArticles && window.ChatMarkdown")
    page.evaluate(WATCH)
    page.evaluate("""() => {
      window.__sent = [];
      var real = window.ChatClient.request;
      window.ChatClient.request = function (frame, callback) {
        return real(frame, function (reply) { window.__sent.push(reply); callback(reply); });
      };
    }""")
    answer = send(page, "write 150 words about rivers")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    page.wait_for_function("() => window.__ends.length === 1")
    end = page.evaluate("window.__ends[0]")
    reply = page.evaluate("window.__sent[0]")
    assert reply["type"] == "sent" and "placeholder" in reply and "html" not in reply, reply
    assert end["sameBody"] and end["removed"] == [] and end["stayed"] == end["before"] and end["tail"] == 0, end
    stats = page.evaluate("window.ChatClient.stats")
    assert stats["patched"] == 1 and stats["replaced"] == 0, stats
    words = answer.locator(".message-body").inner_text().split()
    assert len(words) >= 140
    built = page.evaluate(ARTICLES)
    page.reload()
    expect(page.locator('article[data-role="assistant"][data-status="complete"]')).to_have_count(1)
    assert page.evaluate(ARTICLES) == built
