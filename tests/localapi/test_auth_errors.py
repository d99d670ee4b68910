"""Authentication, error bodies per status (spec 5, 7), the fault switch and real per-key rate limits."""

import httpx
import pytest

from tests.conftest import free_port, start_server, stop_server

BODY = {"model": "local/chat", "messages": [{"role": "user", "content": "hello"}]}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Basic abc"}])
def test_missing_or_wrong_key_is_401_plain(live_server, headers):
    response = httpx.post(f"{live_server.api_url}/chat/completions", json=BODY, headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/plain")
    assert "API key" in response.text


def test_unknown_path_is_404_plain(api):
    response = api.get("/no/such/thing")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/plain")
    assert "/local/v1/no/such/thing" in response.text


JSON_FAULTS = [("402", 402, 30001), ("500", 500, 50000), ("503", 503, 50505)]
PLAIN_FAULTS = [("401", 401), ("403", 403), ("404", 404), ("504", 504)]


@pytest.mark.parametrize(("fault", "status", "code"), JSON_FAULTS)
def test_json_error_faults(api, fault, status, code):
    response = api.post("/chat/completions", json=BODY, headers={"X-Local-Fault": fault})
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"code", "message", "data"}
    assert body["code"] == code
    if status == 503:
        assert response.headers["Retry-After"] == "5"


@pytest.mark.parametrize(("fault", "status"), PLAIN_FAULTS)
def test_plain_error_faults(api, fault, status):
    response = api.post("/chat/completions", json=BODY, headers={"X-Local-Fault": fault})
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text


@pytest.mark.parametrize("limit", ["RPM", "RPD", "TPM", "TPD", "IPM", "IPD"])
def test_rate_limit_faults_name_the_limit_type(api, limit):
    response = api.post(
        "/chat/completions",
        json=BODY,
        headers={"X-Local-Fault": f"429-{limit.lower()}", "X-Local-Retry-After": "12"},
    )
    assert response.status_code == 429
    body = response.json()
    assert set(body) == {"message", "data", "type"}
    assert body["type"] == "rate_limit_exceeded"
    assert limit in body["message"] and "per" in body["message"]  # e.g. "RPM (requests per minute)"
    assert body["data"] == limit
    assert response.headers["Retry-After"] == "12"


def test_fault_directive_in_the_last_user_message(api):
    body = {"model": "local/chat", "messages": [{"role": "user", "content": "please fail [fault:503]"}]}
    response = api.post("/chat/completions", json=body)
    assert response.status_code == 503
    assert response.json()["code"] == 50505


def test_unknown_fault_is_400(api):
    response = api.post("/chat/completions", json=BODY, headers={"X-Local-Fault": "explode"})
    assert response.status_code == 400
    assert "X-Local-Fault" in response.json()["message"]


@pytest.mark.spawns
def test_real_rate_limits_per_key(tmp_path):
    """A separate server with tiny limits: the 4th request in a minute is refused with RPM, for that key only."""
    port = free_port()
    process = start_server(
        port, tmp_path / "server.log", LOCAL_API_RPM="3", LOCAL_API_TPM="1000000", LOCAL_API_KEYS="sk-one,sk-two"
    )
    try:
        url = f"http://127.0.0.1:{port}/local/v1/chat/completions"
        headers = {"Authorization": "Bearer sk-one"}
        statuses = [httpx.post(url, json=BODY, headers=headers, timeout=30).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        response = httpx.post(url, json=BODY, headers=headers, timeout=30)
        assert response.json()["data"] == "RPM"
        assert response.json()["type"] == "rate_limit_exceeded"
        assert "requests per minute" in response.json()["message"]
        assert 1 <= int(response.headers["Retry-After"]) <= 60
        other = httpx.post(url, json=BODY, headers={"Authorization": "Bearer sk-two"}, timeout=30)
        assert other.status_code == 200
    finally:
        stop_server(process)


@pytest.mark.spawns
def test_token_limit_names_tpm(tmp_path):
    port = free_port()
    process = start_server(port, tmp_path / "server.log", LOCAL_API_TPM="300")
    try:
        url = f"http://127.0.0.1:{port}/local/v1/chat/completions"
        headers = {"Authorization": "Bearer sk-local-test-0123456789abcdef"}
        long = {"model": "local/chat", "messages": [{"role": "user", "content": "write 200 words about snow"}]}
        assert httpx.post(url, json=long, headers=headers, timeout=30).status_code == 200
        response = httpx.post(url, json=long, headers=headers, timeout=30)
        assert response.status_code == 429
        assert "TPM (tokens per minute)" in response.json()["message"]
        assert response.json()["type"] == "rate_limit_exceeded"
    finally:
        stop_server(process)
