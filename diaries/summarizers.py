"""Summarisers that turn a range of rounds into a diary summary (and optionally a diary).

Two implementations (docs/diaries.md): `ExtractiveSummarizer`, offline and deterministic, the default;
and `HttpSummarizer`, which asks an OpenAI-compatible chat model for JSON. No Django import at
module level: `get_summarizer` reads settings lazily so this module stays usable in plain tests.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol, runtime_checkable

from memoryhub.clients.chat import ChatCompletionsClient
from memoryhub.clients.errors import UpstreamProtocolError
from memoryhub.clients.summarizer import SERVICE, SummarizerClient
from tables.parsing import without_table_edits

SUMMARY_MAX_CHARS = 300
DIARY_MAX_CHARS = 1200
DEFAULT_TIMEOUT_SECONDS = 30.0
SPOKEN_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class SummaryResult:
    summary: str
    diary: str | None
    summarizer: str


@runtime_checkable
class Summarizer(Protocol):
    name: str

    def summarize(
        self, messages: list[dict], round_from: int, round_to: int, want_diary: bool, context: str = ""
    ) -> SummaryResult: ...


class SummaryParseError(UpstreamProtocolError):
    """The model answered, but its text is not the summary/diary JSON we asked for."""

    def __init__(self, reason: str, *, raw: str = ""):
        super().__init__(
            f"summarizer reply could not be parsed: {reason}",
            service=SERVICE,
            details={"reason": reason, "raw": raw[:500]},
        )
        self.reason = reason


class SummarizerConfigError(ValueError):
    """SUMMARIZER_* settings are inconsistent (e.g. a base URL without a model)."""


def spoken_texts(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, text) of the user/assistant messages; system/tool messages are not the story, and neither are a
    reply's `<tableEdit>` blocks (calls on the memory tables, applied on their own: docs/tables.md)."""
    out = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role in SPOKEN_ROLES and isinstance(content, str) and (said := without_table_edits(content).strip()):
            out.append((role, said))
    return out


# ---------------------------------------------------------------- extractive

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9'’-]*")
# Split after sentence punctuation (CJK or Latin) or at line breaks; a Latin period only
# counts when whitespace follows, so "3.5" and "e.g." inside a word survive.
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;…])\s*|(?<=\.)\s+|\n+")
_CJK_PUNCT_END = re.compile(f"[{_CJK}。！？；…」』）》”]$")
# Function words carry no topic; without this list "the"/"的" would dominate every score.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "so",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "its",
        "our",
        "their",
        "this",
        "that",
        "these",
        "those",
        "do",
        "does",
        "did",
        "not",
        "no",
        "yes",
        "oh",
        "ok",
        "okay",
        "just",
        "very",
        "too",
        "can",
        "could",
        "will",
        "would",
        "should",
        "what",
        "which",
        "who",
        "how",
        "then",
        "than",
        "there",
        "here",
        "have",
        "has",
        "had",
    ]
)
_STOP_CHARS = frozenset("的了是我你他她它们在和就也都不有这那吗呢吧啊着么嗯哦呀个一")


def _terms(sentence: str) -> list[str]:
    """English words, plus CJK character bigrams (single characters are too ambiguous)."""
    lowered = sentence.lower()
    terms = [w for w in _WORD.findall(lowered) if len(w) > 1 and w not in _STOPWORDS]
    for run in _CJK_RUN.findall(sentence):
        chars = [c for c in run if c not in _STOP_CHARS]
        if len(chars) == 1:
            terms.append(chars[0])
        terms.extend(a + b for a, b in pairwise(chars))
    return terms


@dataclass(frozen=True)
class _Sentence:
    position: int
    message_index: int
    text: str
    terms: tuple[str, ...]


def _sentences(texts: list[tuple[str, str]]) -> list[_Sentence]:
    out: list[_Sentence] = []
    for index, (_role, text) in enumerate(texts):
        for piece in _SENTENCE_END.split(text):
            piece = piece.strip()
            if piece:
                out.append(_Sentence(len(out), index, piece, tuple(_terms(piece))))
    return out


def _score(sentence: _Sentence, frequency: Counter) -> float:
    distinct = set(sentence.terms)
    if not distinct:
        return 0.0
    # sqrt normalisation: favour sentences dense in recurring topics without letting the
    # longest sentence win just by having more words.
    return sum(frequency[t] for t in distinct) / math.sqrt(len(distinct))


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _join(chosen: list[_Sentence]) -> str:
    parts: list[str] = []
    for i, sentence in enumerate(chosen):
        if i:
            previous = chosen[i - 1]
            if sentence.message_index != previous.message_index:
                parts.append("\n")
            elif not _CJK_PUNCT_END.search(previous.text):
                parts.append(" ")  # Latin text needs a space; CJK sentences join directly
        parts.append(sentence.text)
    return "".join(parts)


def _extract(sentences: list[_Sentence], frequency: Counter, limit: int, separator_cost: int = 1) -> str:
    """Greedy by score within `limit` chars, then back into chronological order."""
    ranked = sorted(sentences, key=lambda s: (-_score(s, frequency), s.position))
    # Fillers like "Ok." or "嗯。" have no terms; drop them unless they are all there is.
    ranked = [s for s in ranked if s.terms] or ranked
    chosen: list[_Sentence] = []
    used = 0
    for sentence in ranked:
        cost = len(sentence.text) + (separator_cost if chosen else 0)
        if used + cost <= limit:
            chosen.append(sentence)
            used += cost
    if not chosen:  # every sentence is longer than the budget: cut the best one
        return _truncate(ranked[0].text, limit)
    chosen.sort(key=lambda s: s.position)
    return _truncate(_join(chosen), limit)


class ExtractiveSummarizer:
    """Offline, deterministic: picks the sentences richest in the range's recurring terms."""

    name = "extractive"

    def __init__(self, summary_max_chars: int = SUMMARY_MAX_CHARS, diary_max_chars: int = DIARY_MAX_CHARS):
        self.summary_max_chars = summary_max_chars
        self.diary_max_chars = diary_max_chars

    def summarize(
        self, messages: list[dict], round_from: int, round_to: int, want_diary: bool, context: str = ""
    ) -> SummaryResult:
        # `context` (the conversation state's background notes) is not part of what was said: an extractive
        # summary only quotes the transcript, so it is not used here.
        sentences = _sentences(spoken_texts(messages))
        if not sentences:
            # Nothing was said (only empty/system messages): say so rather than invent text.
            empty = f"Rounds {round_from}-{round_to}: no messages."
            return SummaryResult(empty, empty if want_diary else None, self.name)
        frequency = Counter(term for s in sentences for term in s.terms)
        summary = _extract(sentences, frequency, self.summary_max_chars)
        diary = _extract(sentences, frequency, self.diary_max_chars) if want_diary else None
        return SummaryResult(summary, diary, self.name)


# ---------------------------------------------------------------- HTTP (OpenAI-compatible)

MESSAGE_MAX_CHARS = 2000
TRANSCRIPT_MAX_CHARS = 24000
CONTEXT_MAX_CHARS = 6000

_SYSTEM_PROMPT = (
    "You write the memory of a role-play/chat conversation. Read the transcript and reply with ONLY a JSON "
    "object, no other text. Write in the language of the conversation."
)
_WANT_DIARY = (
    'Reply as {{"summary": "...", "diary": "..."}}: "summary" is at most {summary} characters of the facts, '
    'events and feelings worth remembering; "diary" is a diary entry of at most {diary} characters, in '
    "chronological order, written from the assistant character's point of view."
)
_SUMMARY_ONLY = (
    'Reply as {{"summary": "..."}}: "summary" is at most {summary} characters of the facts, events and '
    "feelings worth remembering."
)
_CONTEXT_INTRO = (
    "Background state of the conversation (the director's notes and records; use it to understand the "
    "transcript, but summarise only what the transcript says):"
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)


def build_transcript(messages: list[dict]) -> str:
    """Role-labelled lines; each message and the whole are capped so the prompt stays bounded."""
    lines = [f"{role}: {_truncate(text, MESSAGE_MAX_CHARS)}" for role, text in spoken_texts(messages)]
    transcript = "\n".join(lines)
    # Keep the end when too long: the newest rounds are the ones not yet remembered.
    return transcript if len(transcript) <= TRANSCRIPT_MAX_CHARS else transcript[-TRANSCRIPT_MAX_CHARS:]


def build_prompt(
    messages: list[dict], round_from: int, round_to: int, want_diary: bool, context: str = ""
) -> list[dict[str, str]]:
    template = _WANT_DIARY if want_diary else _SUMMARY_ONLY
    instructions = template.format(summary=SUMMARY_MAX_CHARS, diary=DIARY_MAX_CHARS)
    if context.strip():
        background = _truncate(context.strip(), CONTEXT_MAX_CHARS)
        instructions += f"\n\n{_CONTEXT_INTRO}\n{background}"
    user = f"{instructions}\n\nTranscript of rounds {round_from} to {round_to}:\n{build_transcript(messages)}"
    return [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _decode_object(text: str) -> dict:
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(stripped)
    # Models sometimes wrap the object in a sentence; the outermost braces are the object.
    if "{" in stripped and "}" in stripped:
        candidates.append(stripped[stripped.index("{") : stripped.rindex("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise SummaryParseError("reply is not a JSON object", raw=text)


def parse_summary_reply(text: str, want_diary: bool) -> tuple[str, str | None]:
    """(summary, diary) from the model's reply; SummaryParseError says what is missing."""
    value = _decode_object(text)
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise SummaryParseError('"summary" must be a non-empty string', raw=text)
    if not want_diary:
        return summary.strip(), None
    diary = value.get("diary")
    if not isinstance(diary, str) or not diary.strip():
        raise SummaryParseError('"diary" must be a non-empty string', raw=text)
    return summary.strip(), diary.strip()


class HttpSummarizer:
    """Asks an OpenAI-compatible chat model for `{"summary", "diary"}` JSON."""

    def __init__(self, client: ChatCompletionsClient):
        self.client = client
        self.name = f"openai-compatible:{client.model}"

    def summarize(
        self, messages: list[dict], round_from: int, round_to: int, want_diary: bool, context: str = ""
    ) -> SummaryResult:
        reply = self.client.complete(build_prompt(messages, round_from, round_to, want_diary, context))
        summary, diary = parse_summary_reply(reply, want_diary)
        return SummaryResult(summary, diary, self.name)


# ---------------------------------------------------------------- selection

_SETTING_NAMES = ("SUMMARIZER_BASE_URL", "SUMMARIZER_MODEL", "SUMMARIZER_API_KEY", "SUMMARIZER_TIMEOUT_SECONDS")


def _django_or_environ() -> dict[str, object]:
    """Django settings when configured, else the environment (scripts, plain tests)."""
    from django.conf import settings  # imported here so this module never requires Django

    if settings.configured:
        return {name: getattr(settings, name, None) for name in _SETTING_NAMES}
    return {name: os.environ.get(name) for name in _SETTING_NAMES}


def _timeout(value: object) -> float:
    if value in (None, ""):
        return DEFAULT_TIMEOUT_SECONDS
    try:
        seconds = float(value if isinstance(value, (int, float)) else str(value))
    except (TypeError, ValueError) as exc:
        raise SummarizerConfigError(f"SUMMARIZER_TIMEOUT_SECONDS must be a number, got {value!r}") from exc
    if not seconds > 0:
        raise SummarizerConfigError("SUMMARIZER_TIMEOUT_SECONDS must be positive")
    return seconds


def get_summarizer(settings_like: Mapping[str, object] | object | None = None) -> Summarizer:
    """HttpSummarizer when SUMMARIZER_BASE_URL is set (empty counts as unset), else ExtractiveSummarizer.

    `settings_like` is a mapping or an object with SUMMARIZER_* attributes; None reads Django settings.
    """
    if settings_like is None:
        values = _django_or_environ()
    elif isinstance(settings_like, Mapping):
        values = {name: settings_like.get(name) for name in _SETTING_NAMES}
    else:
        values = {name: getattr(settings_like, name, None) for name in _SETTING_NAMES}
    base_url = values["SUMMARIZER_BASE_URL"]
    if not base_url:
        return ExtractiveSummarizer()
    model = values["SUMMARIZER_MODEL"]
    if not model:
        # No silent default model: a wrong model name would fail every diary at the provider.
        raise SummarizerConfigError("SUMMARIZER_MODEL is required when SUMMARIZER_BASE_URL is set")
    client = SummarizerClient(
        str(base_url),
        str(model),
        str(values["SUMMARIZER_API_KEY"] or "") or None,
        _timeout(values["SUMMARIZER_TIMEOUT_SECONDS"]),
    )
    return HttpSummarizer(client)
