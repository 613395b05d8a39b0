"""Prompt templates: `{{variable}}` placeholders, read by scenario validation and filled by the runtimes."""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def template_placeholders(template: str) -> list[str]:
    """The variables a template names, once each, in order of first use."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def render_template(template: str, values: dict[str, str]) -> str:
    """Substitute every placeholder in one pass, so recalled text is never re-interpreted; unknown ones become ""."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), template)
