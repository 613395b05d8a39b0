"""Wording of generated messages: "1 round", "2 rounds" (never "1 rounds" or "round(s)")."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
