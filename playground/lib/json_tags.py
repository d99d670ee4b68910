"""A template builtin (settings.TEMPLATES): `value|as_json` shows a request's value as the API spec spells it."""

import json

from django import template

register = template.Library()


@register.filter
def as_json(value) -> str:
    """JSON (true, false, null, [ ], { } with double quotes) for anything but a string, which shows as it is: a
    parameter reads `stream true`, never Python's `stream True` or `[{'type': 'function', …}]`."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
