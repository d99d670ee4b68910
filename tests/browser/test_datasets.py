"""Datasets in Chromium at 1440 px and 390 px: alice creates a dataset by importing a CSV, edits a cell, saves a
version with a message and exports it; from a chat answer she adds the turn to a dataset in two clicks (open the
menu, choose the dataset); bob, on her team, finds the team's dataset and saves a version of his own."""

import pytest
from django.test import Client
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.datasets import services
from playground.datasets.models import Dataset
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.browser.conftest import log_in, orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
CSV = 'question,expected\n"Grüße, ""friend""","Hallo"\nWhat is 2+2?,4\n'.encode()


def page_of(browser, live_server, user, size):
    context = browser.new_context(base_url=live_server.url, viewport=SIZES[size])
    context.set_default_timeout(15_000)
    log_in(context, Client(), user)
    return context.new_page()


def no_sideways_scroll(page):
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"the page scrolls sideways: {width}px"


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_import_edit_save_and_export(browser, live_server, alice, size, tmp_path):
    page = page_of(browser, live_server, alice, size)
    page.goto("/datasets/")
    no_sideways_scroll(page)
    page.get_by_label("File (.csv or .jsonl)").set_input_files(
        {"name": "broken.csv", "mimeType": "text/csv", "buffer": b"question,expected\nfine,yes\nshort\n"}
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("#dataset-errors")).to_contain_text(
        "row 2: no value for column “expected” (1 value for 2 columns: question, expected)."
    )
    no_sideways_scroll(page)
    screenshot(page, f"datasets-import-error-{size}")
    page.get_by_label("File (.csv or .jsonl)").set_input_files(
        {"name": "greetings.csv", "mimeType": "text/csv", "buffer": CSV}
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("#dataset-title")).to_contain_text("greetings")
    expect(page.get_by_role("textbox", name="Row 1, question", exact=True)).to_have_value('Grüße, "friend"')
    no_sideways_scroll(page)
    screenshot(page, f"datasets-grid-{size}")

    page.get_by_role("textbox", name="Row 2, expected", exact=True).fill("four")
    page.get_by_label("What changed (optional)").first.fill("spelled out")
    page.get_by_role("button", name="Save as v2").click()
    expect(page.locator("#dataset-title")).to_contain_text("v2")
    expect(page.get_by_role("textbox", name="Row 2, expected", exact=True)).to_have_value("four")
    version = orm(lambda: Dataset.objects.get(name="greetings").latest())
    assert (version.number, version.message, version.rows[1]["expected"]) == (2, "spelled out", "four")

    with page.expect_download() as download:
        page.locator("#export-csv").click()
    saved = tmp_path / "export.csv"
    download.value.save_as(saved)
    assert (
        saved.read_bytes().decode("utf-8") == 'question,expected\r\n"Grüße, ""friend""",Hallo\r\nWhat is 2+2?,four\r\n'
    )

    page.get_by_role("link", name="History (2)").click()
    expect(page.locator("#history")).to_contain_text("spelled out")
    no_sideways_scroll(page)
    screenshot(page, f"datasets-history-{size}")


def _turn(alice):
    conversation = Conversation.objects.create(owner=alice, title="Tides", model_id="local/chat")
    Message.objects.create(conversation=conversation, role="user", content="Why are there two tides a day?")
    Message.objects.create(conversation=conversation, role="assistant", content="Because of two tidal bulges.")
    services.create(user=alice, team=None, name="Physics questions", columns=["question"])
    return conversation


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_add_a_chat_turn_to_a_dataset_in_two_clicks(browser, live_server, alice, size, catalog):
    conversation = orm(_turn, alice)
    page = page_of(browser, live_server, alice, size)
    page.goto(f"/c/{conversation.pk}/")
    answer = page.locator(".message-assistant")
    answer.get_by_text("Add to dataset").click()  # click 1: the menu of datasets
    choice = answer.get_by_role("button", name="Physics questions")
    expect(choice).to_be_visible()
    screenshot(page, f"datasets-add-from-chat-{size}")
    choice.click()  # click 2: added
    expect(answer.get_by_role("status")).to_contain_text("Added to Physics questions as v2 (row 1)")
    version = orm(lambda: Dataset.objects.get(name="Physics questions").latest())
    assert version.rows == [
        {"values": {"question": "Why are there two tides a day?"}, "expected": "Because of two tidal bulges."}
    ]


def _team_dataset(alice, bob):
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    services.create(
        user=alice,
        team=team,
        name="Team cases",
        columns=["question"],
        rows=[{"values": {"question": "hi"}, "expected": "hello"}],
    )


def test_a_team_member_finds_the_teams_dataset_and_saves_a_version(browser, live_server, alice, bob):
    orm(_team_dataset, alice, bob)
    page = page_of(browser, live_server, bob, "desktop")
    page.goto("/datasets/")
    page.get_by_role("link", name="Team cases").click()
    page.get_by_role("textbox", name="New row 1, question").fill("bye")
    page.get_by_role("textbox", name="New row 1, expected").fill("goodbye")
    page.get_by_role("button", name="Add row").click()
    expect(page.get_by_role("textbox", name="New row 2, question")).to_be_visible()
    page.get_by_role("button", name="Save as v2").click()
    expect(page.locator("#dataset-title")).to_contain_text("v2")
    latest = orm(lambda: (lambda v: (v.author.username, v.row_count))(Dataset.objects.get(name="Team cases").latest()))
    assert latest == ("bob", 2)
    assert page.get_by_role("button", name="Delete this dataset").count() == 0


def _evaluation(alice):
    from playground.connections.models import ensure_local_connection
    from tests.evaluate.conftest import make_evaluation

    ensure_local_connection(alice)
    evaluation = make_evaluation(alice, rows=2)
    services.create(
        user=alice,
        team=None,
        name="Capitals",
        columns=["question"],
        rows=[{"values": {"question": f"Capital of {c}?"}, "expected": c[:3]} for c in ("France", "Peru", "Chad")],
    )
    return evaluation


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_an_evaluation_row_to_a_dataset_and_the_cases_from_a_dataset(browser, live_server, alice, size, catalog):
    evaluation = orm(_evaluation, alice)
    page = page_of(browser, live_server, alice, size)
    page.goto(f"/evaluate/{evaluation.pk}/")
    row = page.locator('tr[data-row="1"]')
    row.get_by_text("+ Dataset").click()  # click 1
    choice = row.get_by_role("button", name="Capitals")
    expect(choice).to_be_visible()
    screenshot(page, f"datasets-add-from-evaluation-{size}")
    choice.click()  # click 2
    expect(row.get_by_role("status")).to_contain_text("Added to Capitals as v2 (row 4)")

    page.goto(f"/evaluate/{evaluation.pk}/?view=editor#cases")
    page.locator("#use-dataset summary").click()
    page.get_by_label("Dataset version (its rows replace the test cases)").select_option(label="Capitals v2 · 4 rows")
    page.get_by_role("button", name="Use these rows").click()
    expect(page.locator("#dataset-ref")).to_have_text("Capitals@v2")
    no_sideways_scroll(page)
    screenshot(page, f"datasets-evaluation-cases-{size}")
    cases = orm(lambda: [(c.values["question"], c.expected) for c in evaluation.cases.all()])
    assert cases == [
        ("Capital of France?", "Fra"),
        ("Capital of Peru?", "Per"),
        ("Capital of Chad?", "Cha"),
        ("q1", "a1"),
    ]


def _shared_turn(alice):
    from playground.sharing.freeze import freeze
    from playground.sharing.models import Share

    conversation = Conversation.objects.create(owner=alice, title="Tides", model_id="local/chat")
    Message.objects.create(conversation=conversation, role="user", content="Why are there two tides a day?")
    Message.objects.create(conversation=conversation, role="assistant", content="Because of two tidal bulges.")
    share = Share(owner=alice, kind="conversation", title="Tides explained", visibility=Share.SIGNED_IN)
    share.source = conversation
    share.save()
    freeze(share)
    return share.token


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_signed_in_viewer_adds_a_shared_turn_to_a_new_dataset(browser, live_server, alice, bob, size):
    token = orm(_shared_turn, alice)
    page = page_of(browser, live_server, bob, size)
    page.goto(f"/s/{token}/")
    answer = page.locator(".message-assistant")
    answer.get_by_text("Add to dataset").click()  # click 1
    new = answer.get_by_role("button", name="+ New dataset")
    expect(new).to_be_visible()
    screenshot(page, f"datasets-add-from-share-{size}")
    new.click()  # click 2
    expect(answer.get_by_role("status")).to_contain_text("Added to Tides as v2 (row 1)")
    rows = orm(lambda: Dataset.objects.get(owner__username="bob").latest().rows)
    assert rows == [{"values": {"input": "Why are there two tides a day?"}, "expected": "Because of two tidal bulges."}]


def test_a_file_over_the_limit_is_refused_before_it_is_sent(browser, live_server, alice):
    page = page_of(browser, live_server, alice, "desktop")
    page.goto("/datasets/")
    field = page.get_by_label("File (.csv or .jsonl)")
    field.set_input_files({"name": "huge.csv", "mimeType": "text/csv", "buffer": b"q\n" + b"x" * (21 * 1024 * 1024)})
    sent = []
    page.on("request", lambda request: sent.append(request.url) if request.method == "POST" else None)
    page.get_by_role("button", name="Import", exact=True).click()
    assert field.evaluate("input => input.validationMessage") == (
        "file: 21 MB; the limit is 20 MB per import. Nothing was imported."
    )
    page.wait_for_timeout(300)  # a refused form sends nothing: give a wrong POST its moment to show
    assert sent == []
    assert not orm(Dataset.objects.exists)
