"""Template filters of the inspector pages: JSON shown readably (escaped by the template like any text)."""

from __future__ import annotations

import json

from django import template

register = template.Library()


@register.filter
def pretty_json(value: object) -> str:
    """JSON pretty-printed with non-ASCII kept; a string is returned as it is."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


@register.filter
def get_item(mapping: object, key: str) -> object:
    return mapping.get(key) if isinstance(mapping, dict) else None
