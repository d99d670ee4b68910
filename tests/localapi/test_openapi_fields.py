"""The OpenAPI document names exactly the request fields the local API reads, no more, no fewer.

The fields are found in the code itself: starting from each route's view, a small reader walks the source
(following calls into the local API's own functions that receive the request or its JSON body) and collects
every literal key read from the body (`body.get("x")`, `body["x"]`, `_number(body, "x")`, a loop over a
literal tuple of names) and from `request.GET`, `request.POST` and `request.FILES`. Parameters read through a
declared set instead of a literal (the chat parameters of the model registry) are added from that set.
"""

import ast
import inspect
import json
import re
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest
from django.urls import URLPattern

from playground.localapi import urls
from playground.localapi.registry import ALL_CHAT_PARAMS, MODELS

DOCUMENT = json.loads((Path(urls.__file__).parent / "openapi.json").read_text())
SCHEMAS = DOCUMENT["components"]["schemas"]
REQUEST_PARTS = ("GET", "POST", "FILES")
# Read in a loop over the registry's declared set (chat.engine._check_supported), not as literals.
DECLARED = {"completions": ALL_CHAT_PARAMS}


def _callee(node: ast.expr, namespace: dict):
    if isinstance(node, ast.Name):
        target = namespace.get(node.id)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        target = getattr(namespace.get(node.value.id), node.attr, None)
    else:
        return None
    target = inspect.unwrap(target) if callable(target) else None
    if inspect.isfunction(target) and target.__module__.startswith("playground.localapi"):
        return target
    return None


def _literals(node: ast.expr, bound: dict[str, set[str]]) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Name):
        return bound.get(node.id, set())
    return set()


def fields_read(function, roots: dict[str, str], bound=None, reads=None, stack=()) -> dict[str, set[str]]:
    """The literal keys `function` (and what it calls with them) reads from its `roots`.

    `roots` maps a local name to what it holds: "body" (the JSON body), "request", or any label for another
    object whose keys are wanted (say, "message"). The result maps "body", "GET", "POST", "FILES" or the
    label to the keys read.
    """
    reads = defaultdict(set) if reads is None else reads
    if function in stack:
        return reads
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    namespace = function.__globals__
    roots, bound = dict(roots), {k: set(v) for k, v in (bound or {}).items()}
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Tuple):
            bound[node.target.id] = set().union(*(_literals(e, {}) for e in node.iter.elts))
        parsed = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        if parsed and getattr(node.value.func, "id", None) == "parse_json":
            roots.update({t.id: "body" for t in node.targets if isinstance(t, ast.Name)})

    def holder(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name) and roots.get(node.id) not in (None, "request"):
            return roots[node.id]
        on_request = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        if on_request and node.attr in REQUEST_PARTS and roots.get(node.value.id) == "request":
            return node.attr
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and holder(node.value):
            reads[holder(node.value)] |= _literals(node.slice, bound)
        membership = isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In)
        if membership and holder(node.comparators[0]):
            reads[holder(node.comparators[0])] |= _literals(node.left, bound)
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and holder(node.func.value) and node.args:
            reads[holder(node.func.value)] |= _literals(node.args[0], bound)
            continue
        callee = _callee(node.func, namespace)
        if callee is None:
            continue
        params = list(inspect.signature(callee).parameters)
        passed = list(zip(params, node.args, strict=False)) + [(k.arg, k.value) for k in node.keywords if k.arg]
        given = {p: roots[a.id] for p, a in passed if isinstance(a, ast.Name) and a.id in roots}
        if given:
            constants = {p: _literals(a, bound) for p, a in passed if _literals(a, bound)}
            fields_read(callee, given, constants, reads, (*stack, function))
    return reads


def routes():
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if pattern.name != "not-found":
            route = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
            yield route, inspect.unwrap(pattern.callback)


def resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def properties(schema: dict) -> set[str]:
    """Every property name an object schema (or any of its anyOf / oneOf variants) allows."""
    schema = resolve(schema)
    names = set(schema.get("properties", {}))
    for variant in schema.get("anyOf", []) + schema.get("oneOf", []):
        names |= properties(variant)
    return names


def documented_body(operation: dict) -> set[str]:
    content = operation.get("requestBody", {}).get("content", {})
    return set().union(*(properties(c["schema"]) for c in content.values()))


def documented_parameters(operation: dict, where: str) -> set[str]:
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == where}


ROUTES = dict(routes())
OPERATIONS = [(path, method) for path, item in DOCUMENT["paths"].items() for method in item]


@pytest.mark.parametrize(("path", "method"), OPERATIONS, ids=[f"{m} {p}" for p, m in OPERATIONS])
def test_the_documented_request_fields_are_the_fields_the_view_reads(path, method):
    view = ROUTES[path]
    operation = DOCUMENT["paths"][path][method]
    reads = fields_read(view, {"request": "request", "body": "body"})
    if method == "get":
        assert documented_parameters(operation, "query") == reads["GET"]
        assert "requestBody" not in operation
    else:
        sent = reads["body"] | reads["POST"] | reads["FILES"] | DECLARED.get(view.__name__, set())
        assert documented_body(operation) == sent
        assert documented_parameters(operation, "query") == set()
    assert documented_parameters(operation, "path") == set(re.findall(r"{(\w+)}", path))


def test_multipart_bodies_are_documented_as_multipart_only():
    for path, view in ROUTES.items():
        reads = fields_read(view, {"request": "request", "body": "body"})
        if reads["FILES"]:
            assert set(DOCUMENT["paths"][path]["post"]["requestBody"]["content"]) == {"multipart/form-data"}, path


def test_each_chat_variant_lists_the_parameters_its_models_accept():
    def accepted(multimodal: bool) -> set[str]:
        chat = [m for m in MODELS.values() if m.kind == "chat" and m.multimodal == multimodal]
        return {"model", "messages"} | set().union(*(m.params for m in chat))

    assert properties(SCHEMAS["ChatRequestText"]) == accepted(multimodal=False)
    assert properties(SCHEMAS["ChatRequestMultimodal"]) == accepted(multimodal=True)


def test_the_message_fields_are_the_ones_the_chat_engine_reads():
    from playground.localapi.engines.chat import validation

    reads = fields_read(validation._validate_messages, {"message": "message"})
    assert properties(SCHEMAS["Message"]) | properties(SCHEMAS["MultimodalMessage"]) == reads["message"]


def test_the_rerank_and_speech_requests_match_the_registry():
    for kind, schema in (("rerank", "RerankRequest"), ("speech", "SpeechRequest")):
        models = [m for m in MODELS.values() if m.kind == kind]
        params = set().union(*(m.params for m in models))
        assert params <= properties(SCHEMAS[schema]), kind


def test_the_reader_sees_what_it_claims_to():
    """The reader must be able to fail: a view reading a field it has never been told about is caught."""

    def view(request, body):
        limit = request.GET.get("limit")
        for name in ("a", "b"):
            body.get(name)
        return helper(body, "c"), limit, body["d"], "e" in body, request.FILES["file"]

    def helper(payload, name):
        return payload.get(name), payload.get("f")

    view.__globals__["helper"] = helper
    helper.__module__ = view.__module__ = "playground.localapi.fake"
    try:
        reads = fields_read(view, {"request": "request", "body": "body"})
    finally:
        del view.__globals__["helper"]
    assert reads == {"GET": {"limit"}, "body": {"a", "b", "c", "d", "e", "f"}, "FILES": {"file"}}
