"""Every HTML page carries a Content-Security-Policy without 'unsafe-inline' scripts; templates have none."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

pytestmark = pytest.mark.django_db

TEMPLATES = Path(settings.BASE_DIR) / "templates"


def test_no_template_has_an_inline_script_or_handler():
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text, flags=re.IGNORECASE):
            if "src=" not in tag:
                offenders.append(f"{path.name}: {tag}")
        offenders += [f"{path.name}: {m}" for m in re.findall(r"\son[a-z]+\s*=", text, flags=re.IGNORECASE)]
        offenders += [f"{path.name}: {m}" for m in re.findall(r"\bhx-on[:-]", text)]
        offenders += [f"{path.name}: javascript:" for _ in re.findall(r"javascript:", text, flags=re.IGNORECASE)]
    assert offenders == []


@pytest.mark.parametrize(
    "name",
    ["chat:index", "connections:index", "rerank:index", "speech:index", "speech:voices", "batches:index"],
)
def test_pages_carry_the_policy(alice_client, name):
    response = alice_client.get(reverse(name))
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy


@pytest.mark.needs_local_api
def test_public_pages_carry_the_policy_and_json_does_not(client, live_server):
    assert "script-src 'self'" in client.get(reverse("accounts:login"))["Content-Security-Policy"]
    import httpx

    api = httpx.get(f"{live_server.api_url}/models", headers={"Authorization": f"Bearer {live_server.api_key}"})
    assert "content-security-policy" not in api.headers


def test_htmx_does_not_inject_its_indicator_style(client):
    page = client.get(reverse("accounts:login")).content.decode()
    assert '"includeIndicatorStyles": false' in page
