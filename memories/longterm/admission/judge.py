"""The optional model judge: a second opinion on the proposals the rules are unsure of.

Configured by ADMISSION_JUDGE_URL (an OpenAI-compatible chat endpoint), ADMISSION_JUDGE_MODEL,
ADMISSION_JUDGE_API_KEY and ADMISSION_JUDGE_TIMEOUT_MS; unset URL means no judge (offline rules).
`admit()` asks it only when the rules refuse with `uncertain=True` (a hedge, an ability question, a style
word in a clause that is not purely about answering) and only after consent, the verbatim quote, secrets,
the content schema and the claimed fields' presence have passed, so a judge can never admit a secret or a
claim the quote does not mention. Its answer is recorded in `Admission.decision["judge"]`; a timeout, an
error or an answer outside the protocol keeps the rules' refusal, and every outcome is counted in
`memoryhub_admission_judge_total{outcome}` on /metrics.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from functools import lru_cache

from memoryhub.clients.errors import UpstreamError, UpstreamTimeout
from memoryhub.clients.judge import JudgeClient
from memoryhub.metrics import ADMISSION_JUDGE

CONFIGURED = object()  # admit(judge=CONFIGURED): whatever the settings configure
MAX_REASON_CHARS = 500

SYSTEM_PROMPT = """You review whether a quote from a user states a durable preference about how an assistant
should answer them, for a memory of kind "{kind}".
Admit only if ALL hold:
- the quote is the user's own standing instruction or stated preference (not a guess, not about someone else);
- it applies from now on, not only to the current message or task (e.g. "translate this", "this time");
- it is not negated ("don't answer in English" does not state English);
- it states every claimed field of the content.
Answer with JSON only: {{"verdict": "admit" | "refuse", "reason": "<one sentence>"}}"""


@dataclass(frozen=True)
class Opinion:
    outcome: str  # admit | refuse | timeout | error
    model: str
    reason: str = ""
    latency_ms: int = 0

    @property
    def verdict(self) -> str | None:
        return self.outcome if self.outcome in ("admit", "refuse") else None

    def record(self) -> dict:
        return {
            "model": self.model,
            "outcome": self.outcome,
            "verdict": self.verdict,
            "reason": self.reason[:MAX_REASON_CHARS],
            "latencyMs": self.latency_ms,
        }


_VERDICT = re.compile(r'"verdict"\s*:\s*"(admit|refuse)"', re.IGNORECASE)
_BARE = re.compile(r"^\W*(admit|refuse)\b", re.IGNORECASE)


def read_answer(text: str) -> tuple[str, str] | None:
    """(verdict, reason) from the model's text: a JSON object (possibly fenced), or a bare admit/refuse."""
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            answer = json.loads(text[start : end + 1])
        except ValueError:
            answer = None
        if isinstance(answer, dict) and str(answer.get("verdict", "")).lower() in ("admit", "refuse"):
            return str(answer["verdict"]).lower(), str(answer.get("reason") or "")
        match = _VERDICT.search(text)
        if match:
            return match.group(1).lower(), ""
    match = _BARE.match(text)
    return (match.group(1).lower(), text.strip()) if match else None


class Judge:
    def __init__(self, client: JudgeClient):
        self.client = client

    def opinion(self, *, kind: str, evidence: str, content: dict, rules_reason: str) -> Opinion:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT.format(kind=kind)},
            {
                "role": "user",
                "content": json.dumps(
                    {"quote": evidence, "claimedContent": content, "rulesWereUnsureBecause": rules_reason},
                    ensure_ascii=False,
                ),
            },
        ]
        started = time.monotonic()
        try:
            text = self.client.complete(messages)
            answer = read_answer(text)
            outcome, reason = answer if answer else ("error", f"answer outside the protocol: {text[:200]!r}")
        except UpstreamTimeout as exc:
            outcome, reason = "timeout", exc.message
        except UpstreamError as exc:
            outcome, reason = "error", exc.message
        ADMISSION_JUDGE.labels(outcome=outcome).inc()
        latency = int((time.monotonic() - started) * 1000)
        return Opinion(outcome=outcome, model=self.client.model, reason=reason, latency_ms=latency)


@lru_cache(maxsize=4)
def _judge_for(url: str, model: str, api_key: str | None, timeout_ms: int) -> Judge:
    return Judge(JudgeClient(url, model, api_key, timeout_seconds=timeout_ms / 1000))


def configured() -> Judge | None:
    """The judge the settings configure, or None (no ADMISSION_JUDGE_URL, or no Django settings at all)."""
    from django.conf import settings

    if not settings.configured:
        return None
    url = getattr(settings, "ADMISSION_JUDGE_URL", None)
    if not url:
        return None
    return _judge_for(
        url,
        getattr(settings, "ADMISSION_JUDGE_MODEL", None) or "gpt-4o-mini",
        getattr(settings, "ADMISSION_JUDGE_API_KEY", None),
        int(getattr(settings, "ADMISSION_JUDGE_TIMEOUT_MS", 3000)),
    )
