"""Two versions compared: a line diff (difflib) of each message and of the parameters, tools and response
format. Each line carries its kind in words and a marker (+, −), so the page never says it with colour alone."""

import difflib
import json

KIND_WORDS = {"add": "added", "del": "removed", "same": "unchanged"}


def line_diff(a: str, b: str) -> list[tuple[str, str]]:
    """(kind, line) pairs: "same", "add" or "del"."""
    lines = []
    for op in difflib.ndiff((a or "").splitlines(), (b or "").splitlines()):
        code, text = op[:2], op[2:]
        if code == "? ":
            continue
        lines.append(({"+ ": "add", "- ": "del"}.get(code, "same"), text))
    return lines


def _pretty(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) if value not in (None, {}, []) else ""


def _turns(version) -> list[tuple[str, str]]:
    turns = [("System", version.system)]
    turns += [(f"Few-shot {i + 1} ({shot['role']})", shot["content"]) for i, shot in enumerate(version.shots)]
    turns.append(("User template", version.template))
    return turns


def sections(a, b) -> list[dict]:
    """Each part of the two versions: its title, whether it changed, and its line diff."""
    parts = []
    left, right = dict(_turns(a)), dict(_turns(b))
    for title in dict.fromkeys([*left, *right]):
        parts.append(_section(title, left.get(title, ""), right.get(title, "")))
    parts.append(_section("Model", a.model_id, b.model_id))
    params_a = {k: v for k, v in a.params.items() if k != "response_format"}
    params_b = {k: v for k, v in b.params.items() if k != "response_format"}
    parts.append(_section("Parameters", _pretty(params_a), _pretty(params_b)))
    parts.append(_section("Tools", _pretty(a.tools), _pretty(b.tools)))
    parts.append(
        _section("Response format", str(a.params.get("response_format", "")), str(b.params.get("response_format", "")))
    )
    return parts


def _section(title: str, a: str, b: str) -> dict:
    lines = line_diff(a, b)
    return {
        "title": title,
        "changed": a != b,
        "lines": lines,
        "added": sum(kind == "add" for kind, _ in lines),
        "removed": sum(kind == "del" for kind, _ in lines),
    }
