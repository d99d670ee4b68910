from django import template

register = template.Library()


@register.filter
def get(mapping, key):
    """mapping[key] in a template (the usage tables name their grouping columns)."""
    return mapping.get(key) if isinstance(mapping, dict) else None
