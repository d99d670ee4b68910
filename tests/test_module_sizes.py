"""The house stays readable for the next person: no module of the playground (its Python, and its own scripts under
static/js; vendored files aside) over 400 lines, and no function over 60 lines in the apps most features lean on
(chat, sharing, connections). A module that grows past the limit is split by meaning (what its parts are for), not
cut by size; a long function is told as a few named steps."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
SHORT_FUNCTIONS_IN = ["playground/chat", "playground/sharing", "playground/connections"]


def _modules(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): _lines(p) for p in _modules("playground") if _lines(p) > MAX_MODULE_LINES}
    assert long == {}, f"split these by meaning: {long}"


def test_no_script_of_ours_is_over_400_lines():
    scripts = sorted((ROOT / "static" / "js").rglob("*.js"))
    assert scripts, "static/js moved: the check reads nothing"
    long = {str(p.relative_to(ROOT)): _lines(p) for p in scripts if _lines(p) > MAX_MODULE_LINES}
    assert long == {}, f"split these by meaning: {long}"


def test_no_function_is_over_60_lines_in_chat_sharing_and_connections():
    long = []
    for folder in SHORT_FUNCTIONS_IN:
        for path in _modules(folder):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1  # from `def` to its last line (decorators aside)
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == [], "\n".join(long)


def test_the_limits_see_what_they_guard():
    # A moved folder must not leave the checks above reading nothing.
    assert all(_modules(folder) for folder in SHORT_FUNCTIONS_IN)
    assert len(_modules("playground")) > 100
