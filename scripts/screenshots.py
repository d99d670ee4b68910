"""Screenshots of the main pages for README, light and dark, taken in Debian's Chromium.

Run by hand: `.venv/bin/python scripts/screenshots.py`. It starts its own daphne on a free port with a temporary
database, signs up a user, fills each page with real content from the local API and writes
docs/screenshots/<page>-<theme>.png, and <page>-phone.png at 390 x 844 for chat, connections, speech and voices.
With `--phone-only` it writes only the phone ones.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from playground import devserver  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PASSWORD = "screenshots-passphrase-42"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
PHONE_ONLY = "--phone-only" in sys.argv


def start(tmp: str, port: int) -> subprocess.Popen:
    env = devserver.sqlite_env(
        tmp,
        "db.sqlite3",
        PORT=str(port),
        LOCAL_API_TOKEN_RATE="400",
        LOCAL_API_KEYS="sk-local-screenshots",
    )
    env.pop("REDIS_URL", None)
    devserver.manage(env, "migrate", "-v0")
    devserver.manage(env, "seed_catalog", "-v0")
    return devserver.start_daphne(port, env)


def shoot(page, name: str, *, phone: bool = False) -> None:
    page.evaluate("window.scrollTo(0, 0)")
    for theme in () if PHONE_ONLY else ("light", "dark"):
        write(page, name, theme)
    if phone:
        page.set_viewport_size(PHONE)
        write(page, name, "light", "phone")
        page.set_viewport_size(DESKTOP)


def write(page, name: str, theme: str, suffix: str = "") -> None:
    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(150)
    path = OUT / f"{name}-{suffix or theme}.png"
    page.screenshot(path=str(path))
    print("wrote", path)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    port = devserver.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = start(tmp, port)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                page = browser.new_page(base_url=f"http://127.0.0.1:{port}", viewport=DESKTOP)
                page.set_default_timeout(30_000)
                page.goto("/accounts/signup/")
                page.get_by_label("Username").fill("demo")
                page.get_by_label("Password", exact=True).fill(PASSWORD)
                page.get_by_label("Password confirmation").fill(PASSWORD)
                page.get_by_role("button", name="Sign up").click()
                page.wait_for_url("**/")

                # Chat: a reasoning answer with a table and code.
                page.get_by_role("textbox", name="Message").fill("Write a table of three planets, then python code")
                page.get_by_role("button", name="Send").click()
                expect(page.locator("article[data-role=assistant][data-status=complete]").last).to_be_visible()
                page.get_by_label("Model", exact=True).select_option("local/reasoner")
                page.wait_for_timeout(500)
                page.get_by_role("textbox", name="Message").fill("What is 12*7+3? Explain briefly.")
                page.get_by_role("button", name="Send").click()
                expect(page.locator("article[data-role=assistant][data-status=complete]")).to_have_count(2)
                shoot(page, "chat", phone=True)

                page.goto("/connections/")
                page.get_by_role("button", name="Test connection").first.click()
                page.wait_for_timeout(800)
                shoot(page, "connections", phone=True)

                page.goto("/rerank/")
                page.get_by_label("Query").fill("How do plants make energy?")
                page.get_by_label("Documents", exact=True).fill(
                    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.\n"
                    "The stock market closed higher on Friday.\n"
                    "Plants store the energy they make as starch.\n"
                    "A recipe for lemon cake with three eggs."
                )
                page.get_by_role("button", name="Rerank", exact=True).click()
                page.wait_for_timeout(1500)
                shoot(page, "rerank")

                page.goto("/speech/")
                page.get_by_label("Text", exact=True).fill(
                    "[S1] Welcome to the playground. [S2] Everything here runs locally."
                )
                page.get_by_role("button", name="Generate speech").click()
                page.wait_for_timeout(3000)
                shoot(page, "speech", phone=True)

                page.goto("/speech/voices/")
                page.wait_for_timeout(500)
                shoot(page, "voices", phone=True)

                page.goto("/batches/")
                page.get_by_label("Prompts", exact=True).fill(
                    "Count the words in: the quick brown fox\nWhat is 6*7?\nList 3 colours"
                )
                page.get_by_role("button", name="Create batch").click()
                page.wait_for_timeout(4000)
                shoot(page, "batches")
                browser.close()
        finally:
            devserver.stop(server, timeout=15)


if __name__ == "__main__":
    main()
