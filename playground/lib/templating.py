"""Prompt templates: `{{name}}` is a variable; `\\{{` writes two literal braces (so `\\{{name}}` stays as typed)."""

import re

NAME = r"[A-Za-z_][A-Za-z0-9_]{0,63}"
TOKEN = re.compile(r"\\\{\{|\{\{\s*(" + NAME + r")\s*\}\}")
NAME_RE = re.compile(r"^" + NAME + r"$")
OPEN = re.compile(r"\\\{\{|\{\{")  # an escape, or the start of a variable
MAX_TEMPLATE = 100_000


def variables(*texts: str) -> list[str]:
    """The variable names of the texts, in order of first appearance."""
    found: dict[str, None] = {}
    for text in texts:
        for match in TOKEN.finditer(text or ""):
            if match.group(1):
                found.setdefault(match.group(1))
    return list(found)


def render(text: str, values: dict) -> tuple[str, list[str]]:
    """The text with its variables filled in, and the names that had no value (left as typed)."""
    missing: list[str] = []

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name is None:
            return "{{"
        if name not in values:
            if name not in missing:
                missing.append(name)
            return match.group(0)
        return str(values[name])

    return TOKEN.sub(fill, text or ""), missing


def segments(text: str) -> list[tuple[str, str]]:
    """(kind, text) pieces for highlighting: "text", "var" (a variable) or "escape" (literal braces)."""
    pieces, at = [], 0
    for match in TOKEN.finditer(text or ""):
        if match.start() > at:
            pieces.append(("text", text[at : match.start()]))
        pieces.append(("var" if match.group(1) else "escape", match.group(0)))
        at = match.end()
    if at < len(text or ""):
        pieces.append(("text", text[at:]))
    return pieces


def _where(text: str, at: int) -> str:
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"line {line}, column {column}"


def syntax_errors(text: str, label: str) -> list[str]:
    """Each `{{` that does not open a well-formed `{{name}}`, in words with its line and column."""
    errors = []
    text = text or ""
    for match in OPEN.finditer(text):
        if match.group(0) != "{{" or TOKEN.match(text, match.start()):
            continue
        rest = text[match.end() :]
        close = rest.find("}}")
        reopened = rest.find("{{")
        where = f"{label}, {_where(text, match.start())}"
        if close < 0 or 0 <= reopened < close:
            errors.append(f"{where}: “{{{{” is not closed by “}}}}” (write \\{{{{ for two literal braces).")
        else:
            inside = rest[:close].strip()
            errors.append(
                f"{where}: “{{{{{inside}}}}}” is not a variable name (letters, digits and _, starting with a letter)."
            )
    return errors
