"""Prompt templates: `{{variable}}` placeholders, read by scenario validation and filled by the runtimes."""

from __future__ import annotations

import re

from memoryhub.errors import PromptTooLarge

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def template_placeholders(template: str) -> list[str]:
    """The variables a template names, once each, in order of first use."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def rendered_length(template: str, values: dict[str, str]) -> int:
    """The length render_template's result would have, computed without building it."""
    length = len(template)
    for match in PLACEHOLDER.finditer(template):
        length += len(values.get(match.group(1), "")) - (match.end() - match.start())
    return length


def render_template(template: str, values: dict[str, str], *, max_chars: int) -> str:
    """Substitute every placeholder in one pass, so recalled text is never re-interpreted; unknown ones become "".

    A result longer than `max_chars` is refused before it is built (413 prompt_too_large): a template that
    repeats a large variable would otherwise cost its size times the repetitions in memory and storage.
    """
    length = rendered_length(template, values)
    if length > max_chars:
        raise PromptTooLarge(
            f"the rendered prompt would be {length} characters; the limit is {max_chars}",
            details={"characters": length, "limit": max_chars},
        )
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), template)
