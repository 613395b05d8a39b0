from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from diaries.summarizers import (
    DIARY_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    ExtractiveSummarizer,
    HttpSummarizer,
    Summarizer,
    SummarizerConfigError,
    SummaryParseError,
    SummaryResult,
    get_summarizer,
    parse_summary_reply,
)
from memoryhub.clients.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from memoryhub.clients.summarizer import SummarizerClient
from tests.support.http_server import Reply, StubHttpServer

CHINESE = [
    {"role": "system", "content": "你是一个温柔的旅伴角色。"},
    {"role": "user", "content": "我下个月要去京都旅行。我想看京都的红叶，听说岚山的红叶最美。"},
    {"role": "assistant", "content": "京都的红叶季在十一月。岚山和东福寺的红叶都很有名！你打算住几天？"},
    {"role": "user", "content": "大概住五天。我还想吃抹茶甜点，京都的抹茶很出名。"},
    {"role": "assistant", "content": "宇治就在京都旁边，抹茶甜点很多。可以安排一天去宇治，再回岚山看红叶。"},
]
ENGLISH = [
    {"role": "user", "content": "My sister Anna is getting married in June. I need to plan the wedding toast."},
    {"role": "assistant", "content": "Congratulations to Anna! A wedding toast usually starts with a short story."},
    {"role": "tool", "content": "IGNORED TOOL OUTPUT THAT MUST NOT APPEAR"},
    {"role": "user", "content": "Anna and I grew up in Lisbon. The toast should mention Lisbon and our childhood."},
    {
        "role": "assistant",
        "content": "Then open the toast with a Lisbon memory from your childhood with Anna. "
        "Keep it under three minutes. Ok.",
    },
]


_SENTENCE = re.compile(r"(?<=[。！？!?.])\s*|\n")


def _normalised(text: str) -> str:
    return re.sub(r"\s+", "", text)


# ---------------------------------------------------------------- extractive


@pytest.mark.parametrize("messages", [CHINESE, ENGLISH], ids=["chinese", "english"])
def test_extractive_summary_is_drawn_from_the_text(messages: list[dict]) -> None:
    summarizer = ExtractiveSummarizer()
    result = summarizer.summarize(messages, 1, 2, want_diary=True)
    assert isinstance(summarizer, Summarizer)
    assert result.summarizer == "extractive"
    assert result.summary and result.diary
    assert len(result.summary) <= SUMMARY_MAX_CHARS
    assert len(result.diary) <= DIARY_MAX_CHARS
    assert len(result.diary) >= len(result.summary)
    spoken = _normalised("".join(m["content"] for m in messages if m["role"] in ("user", "assistant")))
    for sentence in _SENTENCE.split(result.summary + "\n" + result.diary):
        assert _normalised(sentence) in spoken  # extracted, not invented
    assert "IGNORED" not in result.diary and "旅伴" not in result.diary


def test_extractive_picks_topical_sentences() -> None:
    english = ExtractiveSummarizer(summary_max_chars=120).summarize(ENGLISH, 1, 2, want_diary=False)
    assert "Anna" in english.summary or "Lisbon" in english.summary
    assert english.diary is None
    chinese = ExtractiveSummarizer(summary_max_chars=60).summarize(CHINESE, 1, 2, want_diary=False)
    assert "红叶" in chinese.summary or "抹茶" in chinese.summary


def test_extractive_is_deterministic() -> None:
    runs = {ExtractiveSummarizer().summarize(CHINESE + ENGLISH, 1, 4, want_diary=True) for _ in range(3)}
    assert len(runs) == 1


def test_extractive_diary_is_chronological() -> None:
    result = ExtractiveSummarizer().summarize(CHINESE, 1, 2, want_diary=True)
    # everything fits in the diary budget, so the diary is every spoken sentence in order
    assert result.diary.index("京都旅行") < result.diary.index("十一月") < result.diary.index("宇治")


def test_extractive_respects_bounds_on_long_input() -> None:
    long_messages = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Round {i}: we talked about the dragon castle and the silver key number {i}. " * 5,
        }
        for i in range(60)
    ]
    result = ExtractiveSummarizer().summarize(long_messages, 1, 30, want_diary=True)
    assert 0 < len(result.summary) <= SUMMARY_MAX_CHARS
    assert SUMMARY_MAX_CHARS < len(result.diary) <= DIARY_MAX_CHARS


def test_extractive_truncates_one_huge_sentence() -> None:
    result = ExtractiveSummarizer().summarize([{"role": "user", "content": "龙" * 5000}], 1, 1, want_diary=True)
    assert len(result.summary) == SUMMARY_MAX_CHARS and result.summary.endswith("…")
    assert len(result.diary) == DIARY_MAX_CHARS


def test_extractive_without_spoken_text() -> None:
    result = ExtractiveSummarizer().summarize([{"role": "system", "content": "x"}], 3, 4, want_diary=False)
    assert result == SummaryResult("Rounds 3-4: no messages.", None, "extractive")


# ---------------------------------------------------------------- HTTP summariser against a real server


@pytest.fixture(scope="module")
def _shared_server() -> Iterator[StubHttpServer]:
    # One server per module: stopping one costs the serve_forever poll interval (0.5 s).
    stub = StubHttpServer().start()
    yield stub
    stub.stop()


@pytest.fixture
def server(_shared_server: StubHttpServer) -> StubHttpServer:
    _shared_server.routes.clear()
    _shared_server.requests.clear()
    return _shared_server


def _completion(content: object) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }


def _summarizer(server: StubHttpServer, *, timeout: float = 5.0, api_key: str | None = "sk-test") -> HttpSummarizer:
    return HttpSummarizer(SummarizerClient(f"{server.url}/v1", "tiny-model", api_key, timeout))


def test_http_success_sends_openai_wire_format(server: StubHttpServer) -> None:
    reply = json.dumps({"summary": "计划去京都看红叶。", "diary": "今天我们聊了京都的红叶和抹茶。"}, ensure_ascii=False)
    server.route("POST", "/v1/chat/completions", Reply(200, _completion(reply)))
    summarizer = _summarizer(server)
    result = summarizer.summarize(CHINESE, 21, 30, want_diary=True)
    assert result == SummaryResult(
        "计划去京都看红叶。", "今天我们聊了京都的红叶和抹茶。", "openai-compatible:tiny-model"
    )
    assert isinstance(summarizer, Summarizer)

    (request,) = server.requests
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-request-id"]
    body = request.json()
    assert body["model"] == "tiny-model" and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    prompt = body["messages"][1]["content"]
    assert "rounds 21 to 30" in prompt and '"diary"' in prompt
    assert "user: 我下个月要去京都旅行" in prompt and "你是一个温柔的旅伴角色" not in prompt


def test_http_without_key_sends_no_authorization(server: StubHttpServer) -> None:
    server.route("POST", "/v1/chat/completions", Reply(200, _completion('{"summary": "s"}')))
    result = _summarizer(server, api_key=None).summarize(ENGLISH, 1, 2, want_diary=False)
    assert result.summary == "s" and result.diary is None
    assert "authorization" not in server.requests[0].headers
    assert '"diary"' not in server.requests[0].json()["messages"][1]["content"]


def test_http_accepts_fenced_json(server: StubHttpServer) -> None:
    fenced = 'Here you go:\n```json\n{"summary": "Toast for Anna.", "diary": "We planned the toast."}\n```'
    server.route("POST", "/v1/chat/completions", Reply(200, _completion(fenced)))
    result = _summarizer(server).summarize(ENGLISH, 1, 2, want_diary=True)
    assert (result.summary, result.diary) == ("Toast for Anna.", "We planned the toast.")


def test_http_500_is_upstream_unavailable(server: StubHttpServer) -> None:
    server.route("POST", "/v1/chat/completions", Reply(500, {"error": "boom"}))
    with pytest.raises(UpstreamUnavailable) as info:
        _summarizer(server).summarize(ENGLISH, 1, 2, want_diary=True)
    assert info.value.details["status"] == 500 and info.value.service == "summarizer"


def test_http_timeout_is_upstream_timeout(server: StubHttpServer) -> None:
    server.route("POST", "/v1/chat/completions", Reply(200, _completion('{"summary": "late"}'), delay_seconds=2.0))
    with pytest.raises(UpstreamTimeout):
        _summarizer(server, timeout=0.2).summarize(ENGLISH, 1, 2, want_diary=False)


def test_connection_refused_is_upstream_unavailable() -> None:
    stub = StubHttpServer().start()
    url = stub.url
    stub.stop()
    client = SummarizerClient(url, "m", None, 1.0)
    with pytest.raises(UpstreamUnavailable):
        HttpSummarizer(client).summarize(ENGLISH, 1, 2, want_diary=False)


@pytest.mark.parametrize(
    "content",
    [
        "I am sorry, I cannot do that.",
        '{"summary": ""}',
        '{"summary": 3, "diary": "d"}',
        '["summary"]',
        '{"summary": "ok"}',
    ],  # the last lacks the wanted diary
)
def test_http_malformed_content_is_summary_parse_error(server: StubHttpServer, content: str) -> None:
    server.route("POST", "/v1/chat/completions", Reply(200, _completion(content)))
    with pytest.raises(SummaryParseError) as info:
        _summarizer(server).summarize(ENGLISH, 1, 2, want_diary=True)
    assert info.value.reason


@pytest.mark.parametrize(
    "body",
    [{"choices": []}, {"choices": [{"message": {"content": None}}]}, {"data": 1}, [1, 2], {"choices": [{"text": "x"}]}],
)
def test_http_wrong_response_shape_is_protocol_error(server: StubHttpServer, body: object) -> None:
    server.route("POST", "/v1/chat/completions", Reply(200, body))
    with pytest.raises(UpstreamProtocolError) as info:
        _summarizer(server).summarize(ENGLISH, 1, 2, want_diary=False)
    assert not isinstance(info.value, SummaryParseError)


def test_http_non_json_body_is_protocol_error(server: StubHttpServer) -> None:
    server.route("POST", "/v1/chat/completions", lambda _r: Reply(200, raw=b"<html>gateway</html>"))
    with pytest.raises(UpstreamProtocolError):
        _summarizer(server).summarize(ENGLISH, 1, 2, want_diary=False)


def test_parse_summary_reply_ignores_diary_when_not_wanted() -> None:
    assert parse_summary_reply('{"summary": " s ", "diary": 5}', want_diary=False) == ("s", None)


# ---------------------------------------------------------------- selection


def test_get_summarizer_defaults_to_extractive() -> None:
    assert get_summarizer({}).name == "extractive"
    assert get_summarizer({"SUMMARIZER_BASE_URL": ""}).name == "extractive"


def test_get_summarizer_with_base_url() -> None:
    settings = {
        "SUMMARIZER_BASE_URL": "http://127.0.0.1:1/v1",
        "SUMMARIZER_MODEL": "m1",
        "SUMMARIZER_API_KEY": "k",
        "SUMMARIZER_TIMEOUT_SECONDS": "7.5",
    }
    summarizer = get_summarizer(settings)
    assert isinstance(summarizer, HttpSummarizer)
    assert summarizer.name == "openai-compatible:m1"
    assert summarizer.client.timeout_seconds == 7.5 and summarizer.client.api_key == "k"

    class SettingsObject:
        SUMMARIZER_BASE_URL = "http://127.0.0.1:1/v1"
        SUMMARIZER_MODEL = "m2"

    assert get_summarizer(SettingsObject()).name == "openai-compatible:m2"


@pytest.mark.parametrize(
    "settings",
    [
        {"SUMMARIZER_BASE_URL": "http://127.0.0.1:1"},
        {"SUMMARIZER_BASE_URL": "http://127.0.0.1:1", "SUMMARIZER_MODEL": "m", "SUMMARIZER_TIMEOUT_SECONDS": "soon"},
        {"SUMMARIZER_BASE_URL": "http://127.0.0.1:1", "SUMMARIZER_MODEL": "m", "SUMMARIZER_TIMEOUT_SECONDS": 0},
    ],
)
def test_get_summarizer_refuses_bad_config(settings: dict) -> None:
    with pytest.raises(SummarizerConfigError):
        get_summarizer(settings)


def test_get_summarizer_reads_settings_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    # No mapping: Django settings when configured, else the environment; either way it selects.
    monkeypatch.delenv("SUMMARIZER_BASE_URL", raising=False)
    assert isinstance(get_summarizer(), Summarizer)


TABLE_EDITING = [
    {"role": "user", "content": "We reach the lighthouse at dusk."},
    {
        "role": "assistant",
        "content": 'Eli unlocks the lighthouse door.\n<tableEdit>\ninsertRow(0, {0: "day 1", 1: "dusk"})\n'
        "</tableEdit>\nThe lamp room smells of salt.",
    },
    {"role": "assistant", "content": '<tableEdit>\nupdateRow(0, 0, {1: "night"})\n</tableEdit>'},
]


def test_table_edit_blocks_are_not_the_story(server: StubHttpServer) -> None:
    """A reply's <tableEdit> calls are applied to the tables; a summary or diary never sees them."""
    result = ExtractiveSummarizer().summarize(TABLE_EDITING, 1, 2, want_diary=True)
    assert "insertRow" not in result.summary + (result.diary or "") and "lamp room" in result.summary
    server.route("POST", "/v1/chat/completions", Reply(200, _completion('{"summary": "s"}')))
    _summarizer(server).summarize(TABLE_EDITING, 1, 2, want_diary=False)
    prompt = server.requests[0].json()["messages"][1]["content"]
    assert "tableEdit" not in prompt and "updateRow" not in prompt
    assert "assistant: Eli unlocks the lighthouse door.\n\nThe lamp room smells of salt." in prompt
