"""Screenshots of every page for README, at desktop (1440 px) and phone (390 px) widths, taken in Debian's Chromium.

Run by hand: `.venv/bin/python scripts/screenshots.py`. It starts its own daphne on a free port with a temporary
database, signs up a user, walks every page with real content from the local API and writes
docs/screenshots/<page>-light.png (1440 x 900) and <page>-phone.png (390 x 844) for each, and <page>-dark.png
for the main pages. With `--phone-only` it writes only the phone ones.
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


def shoot(page, name: str, *, dark: bool = False) -> None:
    """The page as it is: light at desktop width (and dark with `dark`), then light at phone width."""
    page.evaluate("window.scrollTo(0, 0)")
    if not PHONE_ONLY:
        write(page, name, "light")
        if dark:
            write(page, name, "dark")
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


def sign_up(page, username: str) -> None:
    page.goto("/accounts/signup/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url("**/")


def complete(page, count: int) -> None:
    expect(page.locator("article[data-role=assistant][data-status=complete]")).to_have_count(count, timeout=60_000)


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
                page.goto("/accounts/login/")
                shoot(page, "login")
                page.goto("/accounts/signup/")
                shoot(page, "signup")
                sign_up(page, "demo")
                shoot(page, "start", dark=True)  # the walk-through of an empty start page

                # Chat: a reasoning answer with a table and code.
                page.get_by_role("textbox", name="Message").fill("Write a table of three planets, then python code")
                page.get_by_role("button", name="Send").click()
                complete(page, 1)
                page.get_by_label("Model", exact=True).select_option("local/reasoner")
                page.wait_for_timeout(500)
                page.get_by_role("textbox", name="Message").fill("What is 12*7+3? Explain briefly.")
                page.get_by_role("button", name="Send").click()
                complete(page, 2)
                shoot(page, "chat", dark=True)
                conversation = page.url
                page.evaluate("document.activeElement.blur()")
                page.keyboard.press("?")
                shoot(page, "shortcuts")
                page.keyboard.press("Escape")

                page.goto(conversation.rstrip("/").replace("/c/", "/shared/conversation/") + "/")
                page.get_by_role("button", name="Create link").click()
                shoot(page, "share")
                link = page.locator("a[href^='/s/']").first.get_attribute("href")
                page.goto(link)
                shoot(page, "shared-view")
                page.goto(conversation.rstrip("/").replace("/c/", "/code/conversation/") + "/")
                shoot(page, "code")
                page.goto("/shared/")
                shoot(page, "shared-links")

                page.goto("/connections/")
                page.get_by_role("button", name="Test connection").first.click()
                page.wait_for_timeout(800)
                shoot(page, "connections", dark=True)
                page.goto("/connections/new/")
                shoot(page, "connection-new")
                page.goto("/connections/")
                page.get_by_role("link", name="Models").first.click()
                shoot(page, "catalog")

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
                shoot(page, "rerank", dark=True)

                page.goto("/speech/")
                page.get_by_label("Text", exact=True).fill(
                    "[S1] Welcome to the playground. [S2] Everything here runs locally."
                )
                page.get_by_role("button", name="Generate speech").click()
                page.wait_for_timeout(3000)
                shoot(page, "speech", dark=True)

                page.goto("/speech/voices/")
                page.wait_for_timeout(500)
                shoot(page, "voices", dark=True)

                page.goto("/batches/")
                page.get_by_label("Prompts", exact=True).fill(
                    "Count the words in: the quick brown fox\nWhat is 6*7?\nList 3 colours"
                )
                page.get_by_role("button", name="Create batch").click()
                page.wait_for_timeout(4000)
                shoot(page, "batches", dark=True)

                page.goto("/evaluate/")
                shoot(page, "evaluate-empty")
                page.get_by_label("Title").fill("Tone check")
                page.get_by_role("button", name="Create").click()
                page.wait_for_url("**/evaluate/*/")
                shoot(page, "evaluate")

                page.goto("/teams/")
                shoot(page, "teams-empty")
                page.get_by_label("Name").fill("Research")
                page.get_by_role("button", name="Create team").click()
                page.get_by_role("button", name="Add the built-in connection").click()
                page.get_by_role("button", name="Make invite link").click()
                shoot(page, "team", dark=True)
                page.get_by_role("link", name="Usage").first.click()
                shoot(page, "team-usage")
                page.get_by_role("link", name="Audit log").first.click()
                shoot(page, "team-audit")

                page.goto("/accounts/password/")
                shoot(page, "password")
                browser.close()
        finally:
            devserver.stop(server, timeout=15)


if __name__ == "__main__":
    main()
