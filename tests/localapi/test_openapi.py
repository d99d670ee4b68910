"""The OpenAPI document of /local/v1: valid OpenAPI 3.1, in step with urls.py (every route with exactly its
methods), and true of the live server (schemathesis: no server errors, documented status codes, content types
and response schemas). Its request fields are checked against the code in test_openapi_fields.py."""

import copy
import json
import re
from pathlib import Path

import httpx
import jsonschema_rs
import schemathesis
from django.urls import URLPattern
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.specs.openapi.definitions import OPENAPI_31

from playground.localapi import urls
from playground.localapi.registry import MODELS

DOCUMENT = json.loads((Path(urls.__file__).parent / "openapi.json").read_text())
METHODS = ("get", "post", "put", "patch", "delete")


def routed_paths() -> set[str]:
    paths = set()
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if pattern.name == "not-found":
            continue
        route = str(pattern.pattern)
        paths.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
    return paths


def operations():
    for path, item in DOCUMENT["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def test_the_document_is_valid_openapi_3_1():
    assert DOCUMENT["openapi"].startswith("3.1.")
    errors = [str(e) for e in jsonschema_rs.validator_for(OPENAPI_31).iter_errors(DOCUMENT)]
    assert errors == []
    assert DOCUMENT["info"]["version"] == "1.0.0"


def test_every_schema_is_valid_json_schema_2020_12():
    for name, schema in DOCUMENT["components"]["schemas"].items():
        assert jsonschema_rs.meta.is_valid(schema), name


def test_every_route_is_documented_and_every_documented_path_is_routed():
    assert routed_paths() == set(DOCUMENT["paths"])


def test_every_operation_names_its_errors_and_the_bearer_scheme_applies():
    assert DOCUMENT["components"]["securitySchemes"]["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert DOCUMENT["security"] == [{"bearerAuth": []}]
    for path, method, operation in operations():
        if operation.get("security") == []:
            continue
        assert "401" in operation["responses"], (path, method)
        assert "200" in operation["responses"], (path, method)
        if method == "post":
            assert "400" in operation["responses"], (path, method)


def test_the_spec_limits_are_in_the_request_schemas():
    schemas = DOCUMENT["components"]["schemas"]
    text = schemas["ChatRequestText"]["properties"]
    assert (text["messages"]["minItems"], text["messages"]["maxItems"]) == (1, 10)
    assert (text["thinking_budget"]["minimum"], text["thinking_budget"]["maximum"]) == (128, 32768)
    assert text["tools"]["maxItems"] == 128
    assert schemas["Tool"]["properties"]["function"]["properties"]["name"]["maxLength"] == 64
    assert schemas["Stop"]["anyOf"][1]["maxItems"] == 4
    speech = schemas["SpeechRequest"]["properties"]
    assert (speech["input"]["minLength"], speech["input"]["maxLength"]) == (1, 128000)
    assert (speech["speed"]["minimum"], speech["speed"]["maximum"]) == (0.25, 4)
    assert (speech["gain"]["minimum"], speech["gain"]["maximum"]) == (-10, 10)
    assert schemas["RerankRequest"]["properties"]["overlap_tokens"]["maximum"] == 80
    metadata = schemas["BatchCreate"]["properties"]["metadata"]["anyOf"][0]
    assert metadata["maxProperties"] == 16
    assert metadata["propertyNames"]["maxLength"] == 64
    assert metadata["additionalProperties"]["maxLength"] == 512


def test_the_server_serves_this_document(live_server):
    response = httpx.get(f"{live_server.api_url}/openapi.json")
    assert response.status_code == 200
    assert response.json() == DOCUMENT


def test_every_documented_operation_is_routed_on_the_server(live_server):
    headers = {"Authorization": f"Bearer {live_server.api_key}"}
    for path, method, _ in operations():
        url = live_server.api_url + path.replace("{file_id}", "file-none").replace("{batch_id}", "batch_none")
        response = httpx.request(method.upper(), url, headers=headers, json={} if method == "post" else None)
        assert response.status_code not in (405, 501), (method, path, response.text)
        assert not response.text.startswith("Path not found"), (method, path)


def test_every_undocumented_method_is_refused_on_the_server(live_server):
    headers = {"Authorization": f"Bearer {live_server.api_key}"}
    with httpx.Client(base_url=live_server.api_url, headers=headers) as api:
        for path, item in DOCUMENT["paths"].items():
            url = path.replace("{file_id}", "file-none").replace("{batch_id}", "batch_none")
            for method in set(METHODS) - set(item):
                response = api.request(method.upper(), url)
                assert response.status_code == 405, (method, path, response.status_code)
                allowed = set(response.headers["Allow"].lower().split(", ")) - {"head"}  # HEAD goes with GET
                assert allowed == set(item) & set(METHODS), (method, path)


def fuzzable(document: dict) -> dict:
    """The document with the model ids pinned to real ones and long inputs capped, so generated requests
    reach the engines and stay quick (the contract itself is unchanged)."""
    document = copy.deepcopy(document)
    schemas = document["components"]["schemas"]
    chat_ids = sorted(m.id for m in MODELS.values() if m.kind == "chat")
    rerank_ids = sorted(m.id for m in MODELS.values() if m.kind == "rerank")
    for name in ("ChatRequestText", "ChatRequestMultimodal"):
        schemas[name]["properties"]["model"] = {"type": "string", "enum": chat_ids}
        schemas[name]["properties"]["max_tokens"]["maximum"] = 64
        schemas[name]["properties"]["n"]["maximum"] = 2
    schemas["RerankRequest"]["properties"]["model"] = {"type": "string", "enum": rerank_ids}
    schemas["SpeechRequest"]["properties"]["input"]["maxLength"] = 80
    return document


# Loaded from the file at import time (schemathesis' lazy fixture loader does not run on pytest 9);
# the live server's address is given per call.
schema = schemathesis.openapi.from_dict(fuzzable(DOCUMENT))


@schema.parametrize()
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_the_live_api_conforms_to_its_document(case, live_server):
    case.call_and_validate(
        base_url=live_server.api_url,
        headers={"Authorization": f"Bearer {live_server.api_key}", "X-Local-Token-Rate": "0"},
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
        timeout=30,
    )
