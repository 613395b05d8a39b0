"""The optional model judge (issue 13, item 3): asked only when the rules are uncertain, recorded with the
decision, and a timeout, a 500 or an answer outside the protocol keep the rules' verdict and are counted.

The judge is a real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions wire format.
"""

from __future__ import annotations

import json

import pytest
from prometheus_client import REGISTRY

from memories.longterm.admission import NOT_DURABLE_PREFERENCE, admit
from memories.longterm.admission.judge import read_answer
from memories.longterm.models import AdmissionRefusal, LongTermMemory
from memoryhub.clients.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from memoryhub.clients.judge import JudgeClient
from tests.longterm.support import memories_url
from tests.support.api import assert_envelope
from tests.support.http_server import Reply
from tests.support.processes import closed_port

HEDGED = ("I think I prefer short answers.", {"detail": "brief"})  # the rules are unsure: a hedge
CERTAIN_REFUSAL = ("I don't want short answers.", {"detail": "brief"})  # negated: no judge can admit it
CLEAR = ("Answer briefly.", {"detail": "brief"})


def chat(verdict: str, reason: str = "a stated preference") -> dict:
    content = json.dumps({"verdict": verdict, "reason": reason})
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }


@pytest.fixture
def judge(settings, stub_server):
    settings.ADMISSION_JUDGE_URL = f"{stub_server.url}/v1"
    settings.ADMISSION_JUDGE_MODEL = "judge-model"
    settings.ADMISSION_JUDGE_API_KEY = "judge-key"
    settings.ADMISSION_JUDGE_TIMEOUT_MS = 300
    return stub_server


def counted(outcome: str) -> float:
    return REGISTRY.get_sample_value("memoryhub_admission_judge_total", {"outcome": outcome}) or 0.0


def propose(evidence_and_content: tuple[str, dict], **kwargs):
    evidence, content = evidence_and_content
    return admit("preference", consent=True, source=evidence, evidence=evidence, content=content, **kwargs)


def test_without_a_url_there_is_no_judge_and_no_request(stub_server) -> None:
    result = propose(HEDGED)
    assert (result.ok, result.code) == (False, NOT_DURABLE_PREFERENCE)
    assert result.decision == {"rules": "refuse", "uncertain": True, "judge": None, "reason": "hedge"}
    assert stub_server.requests == []


def test_an_uncertain_refusal_is_overturned_by_the_judge_and_the_answer_recorded(judge) -> None:
    judge.route("POST", "/v1/chat/completions", Reply(200, chat("admit", "the user states it")))
    before = counted("admit")
    result = propose(HEDGED)
    assert result.ok and result.normalized_content == {"detail": "brief"}
    record = result.decision["judge"]
    assert result.decision["rules"] == "refuse" and result.decision["uncertain"] is True
    assert (record["model"], record["outcome"], record["verdict"]) == ("judge-model", "admit", "admit")
    assert record["reason"] == "the user states it" and record["latencyMs"] >= 0
    assert counted("admit") == before + 1
    (request,) = judge.requests
    body = request.json()
    assert body["model"] == "judge-model" and body["temperature"] == 0
    assert request.headers["authorization"] == "Bearer judge-key" and request.headers["x-request-id"]
    quoted = json.loads(body["messages"][1]["content"])
    assert quoted["quote"] == HEDGED[0] and quoted["claimedContent"] == {"detail": "brief"}


def test_the_judge_may_confirm_the_refusal(judge) -> None:
    judge.route("POST", "/v1/chat/completions", Reply(200, chat("refuse", "hedged")))
    result = propose(HEDGED)
    assert (result.ok, result.code) == (False, NOT_DURABLE_PREFERENCE)
    assert result.decision["judge"]["verdict"] == "refuse"


def test_certain_verdicts_never_reach_the_judge(judge) -> None:
    judge.route("POST", "/v1/chat/completions", Reply(200, chat("admit")))
    assert propose(CLEAR).ok
    refused = propose(CERTAIN_REFUSAL)
    assert (refused.ok, refused.decision["judge"]) == (False, None)
    wrong_claim = propose(("I think I prefer Chinese.", {"language": "en"}))  # hedged, but claims what is not said
    assert (wrong_claim.ok, wrong_claim.decision["judge"]) == (False, None)
    secret = admit(
        "preference",
        consent=True,
        source="I think I prefer short answers. password: hunter2",
        evidence=HEDGED[0],
        content=HEDGED[1],
    )
    assert not secret.ok and secret.decision["judge"] is None
    assert judge.requests == []


def test_a_timeout_keeps_the_rules_verdict_and_is_counted(judge) -> None:
    judge.route("POST", "/v1/chat/completions", Reply(200, chat("admit"), delay_seconds=2))
    before = counted("timeout")
    result = propose(HEDGED)
    assert (result.ok, result.code) == (False, NOT_DURABLE_PREFERENCE)
    assert result.decision["judge"]["outcome"] == "timeout" and result.decision["judge"]["verdict"] is None
    assert counted("timeout") == before + 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, {"error": "boom"}),
        Reply(200, {"choices": []}),
        Reply(200, chat("perhaps")),
        Reply(200, raw=b"not json"),
    ],
    ids=["500", "no choices", "no verdict", "not json"],
)
def test_errors_keep_the_rules_verdict_and_are_counted(judge, reply: Reply) -> None:
    judge.route("POST", "/v1/chat/completions", reply)
    before = counted("error")
    result = propose(HEDGED)
    assert (result.ok, result.code) == (False, NOT_DURABLE_PREFERENCE)
    assert result.decision["judge"]["outcome"] == "error"
    assert counted("error") == before + 1


def test_an_unreachable_judge_is_an_error(settings) -> None:
    settings.ADMISSION_JUDGE_URL = f"http://127.0.0.1:{closed_port()}/v1"
    settings.ADMISSION_JUDGE_TIMEOUT_MS = 500
    result = propose(HEDGED)
    assert not result.ok and result.decision["judge"]["outcome"] == "error"


# --- through HTTP and /metrics ------------------------------------------------------------------


@pytest.mark.django_db
def test_through_the_api_the_judge_admits_an_uncertain_proposal(alice, judge) -> None:
    judge.route("POST", "/v1/chat/completions", Reply(200, chat("admit")))
    evidence, content = HEDGED
    body = {"kind": "preference", "content": content, "evidence": evidence, "source": evidence, "consent": True}
    response = alice.post(memories_url(), body)
    assert response.status_code == 201, response.json()
    assert LongTermMemory.objects.get(memory_id=response.json()["id"]).content == content


@pytest.mark.django_db
def test_through_the_api_a_failing_judge_leaves_the_rules_422_and_shows_in_metrics(alice, judge) -> None:
    from rest_framework.test import APIClient

    judge.route("POST", "/v1/chat/completions", Reply(500, {"error": "down"}))
    evidence, content = HEDGED
    body = {"kind": "preference", "content": content, "evidence": evidence, "source": evidence, "consent": True}
    error = assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert (error["details"]["reason"], error["details"]["code"]) == ("hedge", NOT_DURABLE_PREFERENCE)
    assert AdmissionRefusal.objects.filter(code=NOT_DURABLE_PREFERENCE).count() == 1
    text = APIClient().get("/metrics").content.decode()
    assert 'memoryhub_admission_judge_total{outcome="error"}' in text


# --- the client and the reading of answers ------------------------------------------------------


def test_the_client_accepts_a_base_or_the_full_endpoint_and_types_its_failures(stub_server) -> None:
    stub_server.route("POST", "/v1/chat/completions", Reply(200, chat("admit")))
    for url in (f"{stub_server.url}/v1", f"{stub_server.url}/v1/chat/completions/"):
        text = JudgeClient(url, "m", timeout_seconds=1).complete([{"role": "user", "content": "x"}])
        assert json.loads(text)["verdict"] == "admit"
    stub_server.route("POST", "/v1/chat/completions", Reply(503, {"error": "busy"}))
    with pytest.raises(UpstreamUnavailable):
        JudgeClient(f"{stub_server.url}/v1", "m", timeout_seconds=1).complete([])
    stub_server.route("POST", "/v1/chat/completions", Reply(200, {"choices": [{"message": {}}]}))
    with pytest.raises(UpstreamProtocolError):
        JudgeClient(f"{stub_server.url}/v1", "m", timeout_seconds=1).complete([])
    stub_server.route("POST", "/v1/chat/completions", Reply(200, chat("admit"), delay_seconds=1))
    with pytest.raises(UpstreamTimeout):
        JudgeClient(f"{stub_server.url}/v1", "m", timeout_seconds=0.2).complete([])
    with pytest.raises(ValueError):
        JudgeClient("", "m")


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ('{"verdict": "admit", "reason": "ok"}', "admit"),
        ('```json\n{"verdict": "REFUSE", "reason": "guess"}\n```', "refuse"),
        ("admit — the user says so", "admit"),
        ('{"verdict": "maybe"}', None),
        ("I cannot tell", None),
    ],
)
def test_answers_are_read_as_json_or_a_bare_verdict(text: str, verdict: str | None) -> None:
    answer = read_answer(text)
    assert (answer[0] if answer else None) == verdict


@pytest.mark.django_db
def test_the_judges_answer_is_recorded_on_the_version_row_and_on_the_refusal_row(alice, judge) -> None:
    from memories.longterm.models import LongTermMemoryVersion

    evidence, content = HEDGED
    body = {"kind": "preference", "content": content, "evidence": evidence, "source": evidence, "consent": True}
    judge.route("POST", "/v1/chat/completions", Reply(200, chat("admit", "the user states it")))
    memory_id = alice.post(memories_url(), body).json()["id"]
    version = LongTermMemoryVersion.objects.get(memory_id=memory_id, action="created")
    assert version.decision["rules"] == "refuse" and version.decision["uncertain"] is True
    assert version.decision["judge"]["verdict"] == "admit" and version.decision["judge"]["model"] == "judge-model"

    judge.route("POST", "/v1/chat/completions", Reply(200, chat("admit"), delay_seconds=1))
    assert_envelope(alice.post(memories_url("u2"), body), 422, "rejected_by_policy")
    refusal = AdmissionRefusal.objects.get(user_id="u2")
    assert refusal.decision["judge"]["outcome"] == "timeout" and refusal.decision["judge"]["verdict"] is None

    plain = {
        **body,
        "content": {"language": "en"},
        "evidence": "Use English with me.",
        "source": "Use English with me.",
    }
    clear_id = alice.post(memories_url("u3"), plain).json()["id"]
    clear = LongTermMemoryVersion.objects.get(memory_id=clear_id, action="created")
    assert clear.decision == {"rules": "admit", "uncertain": False, "judge": None}
