"""The team library in Chromium: alice moves a clip to her team from the speech page; bob finds it on the team
page by kind and forks it; bob's conversation on a revoked team connection says so and asks for another one.
Screenshots at 1280 and 390 px go to /tmp/teams2-*.png."""

import pytest
from django.test import Client
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.connections.models import Connection
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.browser.conftest import log_in, orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def shot(page, name: str) -> None:
    page.screenshot(path=f"/tmp/teams2-{name}.png", full_page=True)


def setup(alice, bob):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    clip = SpeechClip.objects.create(
        owner=alice, model="local/tts", voice="local/tts:alex", text="[S1] Hello team.", status="complete"
    )
    clip.file = f"speech/{alice.pk}/{clip.pk}-browser.mp3"
    clip.path.parent.mkdir(parents=True, exist_ok=True)
    clip.path.write_bytes(b"ID3" + bytes(512))
    clip.bytes = 515
    clip.save()
    gateway = Connection(owner=alice, team=team, name="Team gateway", base_url="http://127.0.0.1:9/v1")
    gateway.set_key("sk-team-browser-0123456789abcdef")
    gateway.save()
    Connection.objects.create(owner=bob, name="Bob's own", base_url="http://127.0.0.1:9/v1")
    talk = Conversation.objects.create(owner=bob, title="Team talk", connection=gateway, model_id="local/chat")
    return team, clip, gateway, talk


def test_move_a_clip_to_the_team_a_member_forks_it_and_a_revoked_connection_is_said(
    alice_page, browser, live_server, alice, bob
):
    team, _clip, gateway, talk = orm(setup, alice, bob)
    page = alice_page
    page.goto("/speech/")
    page.get_by_role("button", name="Move to Research").first.click()
    expect(page.locator("#library")).to_contain_text("Speech: [S1] Hello team.")
    expect(page.locator(".flash-success").first).to_contain_text("is now in the library of Research")
    shot(page, "team-library-1280")
    page.goto("/speech/")
    shot(page, "speech-move-1280")

    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    try:
        log_in(context, Client(), bob)
        member = context.new_page()
        member.goto(f"/teams/{team.pk}/")
        clips = member.locator('[data-kind="speech-clips"]')
        expect(clips).to_contain_text("by alice")
        clips.get_by_role("link", name="Fork").click()
        shot(member, "fork-clip-1280")
        member.get_by_label("Continue with connection").select_option(label="Bob's own")
        member.get_by_role("button", name="Fork", exact=True).click()
        member.wait_for_url("**/speech/")
        shot(member, "forked-clip-1280")
        shot(member, "forked-clip-1280")
        assert orm(lambda: SpeechClip.objects.filter(owner=bob).count()) == 1

        orm(lambda: Connection.objects.filter(pk=gateway.pk).update(revoked=True))
        member.goto(f"/c/{talk.pk}/")
        notice = member.locator("#connection-notice")
        expect(notice).to_contain_text("“Team gateway” of Research was revoked")
        shot(member, "revoked-notice-1280")
        member.set_viewport_size(PHONE)
        member.reload()
        expect(notice).to_be_visible()
        box = notice.bounding_box()
        assert box and box["width"] <= PHONE["width"]
        shot(member, "revoked-notice-390")
        member.goto(f"/teams/{team.pk}/")
        shot(member, "team-library-390")
        assert member.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
        notice_connection = "Bob's own"
        member.goto(f"/c/{talk.pk}/")
        member.get_by_label("Connection").select_option(label=notice_connection)
        member.get_by_role("button", name="Use this connection").click()
        expect(member.locator("#connection-notice")).to_have_count(0)
        assert orm(lambda: Conversation.objects.get(pk=talk.pk).connection.name) == notice_connection
    finally:
        context.close()
    page.set_viewport_size(PHONE)
    page.goto("/speech/")
    shot(page, "speech-move-390")
    mine = orm(lambda: Conversation.objects.create(owner=alice, title="Plans"))
    for size, viewport in (("390", PHONE), ("1280", {"width": 1280, "height": 860})):
        page.set_viewport_size(viewport)
        page.goto(f"/c/{mine.pk}/")
        page.locator(".share-menu summary").click()
        expect(page.get_by_role("button", name="Move to Research")).to_be_visible()
        shot(page, f"chat-move-{size}")
    page.get_by_role("button", name="Move to Research").click()
    expect(page.locator('[data-kind="conversations"]')).to_contain_text("Plans")

    def rows():
        from playground.batches.models import Batch
        from playground.rerank.models import RerankRun

        own = Connection.objects.create(owner=alice, name="Alice's own", base_url="http://127.0.0.1:9/v1")
        Batch.objects.create(owner=alice, connection=own, remote_id="batch_1", input_file_id="f", status="completed")
        return RerankRun.objects.create(
            owner=alice, model="local/reranker", query="rivers", documents=["a"], results=[]
        )

    run = orm(rows)
    for size, viewport in (("390", PHONE), ("1280", {"width": 1280, "height": 860})):
        page.set_viewport_size(viewport)
        for name, url in (("batches", "/batches/"), ("rerank", f"/rerank/runs/{run.pk}/")):
            page.goto(url)
            expect(page.get_by_role("button", name="Move to Research").first).to_be_visible()
            shot(page, f"{name}-move-{size}")
    assert orm(lambda: Share.objects.for_source(mine).get().live)
