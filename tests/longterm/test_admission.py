"""Long-term memory admission (docs/long-term-memories.md): consent, verbatim evidence, secrets, schema, durability."""

from __future__ import annotations

import pytest

from memories.longterm.admission import (
    EVIDENCE_NOT_IN_SOURCE,
    INVALID_CONTENT,
    KINDS,
    NO_CONSENT,
    NOT_DURABLE_PREFERENCE,
    SECRET_DETECTED,
    UNKNOWN_KIND,
    KindRules,
    Refused,
    admit,
    cn_resident_id_valid,
    contains_secret,
    find_secrets,
    get_kind,
    luhn_valid,
    normalize_language,
    register_kind,
)


def admit_quote(evidence: str, content: object, *, source: str | None = None, consent: object = True):
    """Admit a preference whose evidence is quoted from a longer user message."""
    text = source if source is not None else f"好的，收到。{evidence} 谢谢！"
    return admit("preference", consent=consent, source=text, evidence=evidence, content=content)


# --- admitted -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "content", "normalized"),
    [
        (
            "我希望你以后都用简短的中文回答我",
            {"language": "zh", "detail": "brief"},
            {"language": "zh", "detail": "brief"},
        ),
        (
            "Please always reply in English, in detail.",
            {"language": "en", "detail": "detailed"},
            {"language": "en", "detail": "detailed"},
        ),
        (
            "请用简洁的中文回复我",
            {"language": "Chinese", "detail": "BRIEF", "text": " 用户喜欢简短的中文回答 "},
            {"language": "zh", "detail": "brief", "text": "用户喜欢简短的中文回答"},
        ),
        ("以后请用日语回答", {"language": "日语"}, {"language": "ja"}),
        ("I prefer answers in Japanese", {"language": "ja-JP"}, {"language": "ja"}),
        ("不要太详细，用中文回答就行", {"language": "zh", "detail": "brief"}, {"language": "zh", "detail": "brief"}),
        ("请尽可能简短地回答", {"detail": "brief"}, {"detail": "brief"}),
        ("从今天起都用英文回答我", {"language": "English"}, {"language": "en"}),
        ("Keep it concise, please.", {"detail": "brief", "language": None}, {"detail": "brief"}),
        ("回答长度适中就好", {"detail": "normal"}, {"detail": "normal"}),
    ],
)
def test_durable_stated_preferences_are_admitted(evidence: str, content: dict, normalized: dict) -> None:
    result = admit_quote(evidence, content)
    assert result.ok, result.reason
    assert (result.code, result.reason) == (None, None)
    assert result.normalized_content == normalized


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("consent", [False, None, "true", 1])
def test_without_explicit_consent_nothing_is_saved(consent: object) -> None:
    for evidence, content in (("请用中文回答我", {"language": "zh"}), ("Please reply in English", {"language": "en"})):
        result = admit_quote(evidence, content, consent=consent)
        assert (result.ok, result.code) == (False, NO_CONSENT)


@pytest.mark.parametrize(
    ("source", "evidence"),
    [
        ("我希望你用中文回答", "我希望你用简短的中文回答"),  # the model embellished the quote
        ("Please reply in English.", "Please always reply in English."),
        ("请用中文回答", ""),
        ("请用中文回答", "   "),
        ("请用中文回答", None),
        (None, "请用中文回答"),
    ],
)
def test_evidence_must_occur_verbatim_in_source(source: object, evidence: object) -> None:
    result = admit("preference", consent=True, source=source, evidence=evidence, content={"language": "zh"})
    assert (result.ok, result.code) == (False, EVIDENCE_NOT_IN_SOURCE)


@pytest.mark.parametrize(
    ("source", "evidence", "content"),
    [
        ("我的密码是 hunter2，以后请用中文回答", "以后请用中文回答", {"language": "zh"}),
        ("Please reply in English. password: hunter2", "Please reply in English.", {"language": "en"}),
        ("请用中文回答", "请用中文回答", {"language": "zh", "text": "key sk-abcdefghijklmnop1234567890"}),
        ("请用中文回答，卡号 4111 1111 1111 1111", "请用中文回答", {"language": "zh"}),
        ("请用中文回答 11010519491231002X", "请用中文回答", {"language": "zh"}),
        ("Please reply in English, my SSN is 123-45-6789", "Please reply in English", {"language": "en"}),
    ],
)
def test_secrets_anywhere_are_refused(source: str, evidence: str, content: dict) -> None:
    result = admit("preference", consent=True, source=source, evidence=evidence, content=content)
    assert (result.ok, result.code) == (False, SECRET_DETECTED)
    assert "hunter2" not in result.reason and "4111" not in result.reason  # never echo the secret


@pytest.mark.parametrize(
    "content",
    [
        "zh",
        ["zh"],
        {},
        {"text": "用户喜欢中文"},
        {"language": "zh", "tone": "friendly"},
        {"language": "klingon"},
        {"language": 7},
        {"detail": "very short"},
        {"language": "zh", "text": ""},
        {"language": "zh", "text": "x" * 501},
    ],
)
def test_content_must_match_the_kind_schema(content: object) -> None:
    result = admit_quote("请用简短的中文回答", content)
    assert (result.ok, result.code) == (False, INVALID_CONTENT)


@pytest.mark.parametrize(
    ("evidence", "content"),
    [
        ("你好", {"language": "zh"}),
        ("今天天气不错", {"language": "zh"}),
        ("hi", {"language": "en"}),
        ("lol", {"language": "en"}),
        ("我可能更喜欢中文吧", {"language": "zh"}),
        ("用户好像喜欢简短的回答", {"detail": "brief"}),
        ("Maybe reply in English", {"language": "en"}),
        ("I guess I prefer short answers", {"detail": "brief"}),
        ("这次用英文回答", {"language": "en"}),
        ("Translate this sentence into English please", {"language": "en"}),
        ("我昨天读了一本英文小说", {"language": "en"}),  # a language word but no instruction
        ("我用英文写了一封信", {"language": "en"}),
        ("请用中文回答", {"language": "en"}),  # the claimed language is not what the user said
        ("请用中文回答，不要用英文", {"language": "en"}),  # explicitly refused language
        ("Please don't reply in English", {"language": "en"}),
        ("请用中文回答", {"language": "zh", "detail": "brief"}),  # detail not stated
        ("Please always reply in English", {"language": "en", "detail": "detailed"}),
        ("Please don't be too brief", {"detail": "brief"}),
        ("请简短地总结，然后详细解释", {"detail": "brief"}),  # conflicting levels
    ],
)
def test_chitchat_guesses_and_unsupported_claims_are_not_durable(evidence: str, content: dict) -> None:
    result = admit_quote(evidence, content)
    assert (result.ok, result.code) == (False, NOT_DURABLE_PREFERENCE), result
    assert result.reason


def test_unknown_kind_is_refused() -> None:
    result = admit("diary", consent=True, source="x", evidence="x", content={})
    assert (result.ok, result.code) == (False, UNKNOWN_KIND)


def test_refusal_order_consent_before_evidence_before_secrets() -> None:
    secret = "password: hunter2"
    assert admit("preference", consent=False, source=secret, evidence="nope", content={}).code == NO_CONSENT
    assert admit("preference", consent=True, source=secret, evidence="nope", content={}).code == EVIDENCE_NOT_IN_SOURCE
    assert admit("preference", consent=True, source=secret, evidence=secret, content={}).code == SECRET_DETECTED


# --- kind registry ------------------------------------------------------------------------------


def test_kinds_can_be_registered_with_their_own_rules() -> None:
    def normalize(content: object) -> dict:
        if not isinstance(content, dict) or not isinstance(content.get("timezone"), str):
            raise ValueError("timezone required")
        return {"timezone": content["timezone"]}

    def check(evidence: str, normalized: dict) -> None:
        if normalized["timezone"] not in evidence:
            raise Refused("not_stated", "timezone not in the evidence")

    register_kind("timezone_test", KindRules(normalize=normalize, check_evidence=check), replace=True)
    assert get_kind("timezone_test") is KINDS["timezone_test"]
    source = "my timezone is Asia/Tokyo"
    ok = admit("timezone_test", consent=True, source=source, evidence=source, content={"timezone": "Asia/Tokyo"})
    assert ok.ok and ok.normalized_content == {"timezone": "Asia/Tokyo"}
    wrong = admit("timezone_test", consent=True, source=source, evidence=source, content={"timezone": "UTC"})
    assert (wrong.ok, wrong.code) == (False, "not_stated")
    assert admit("timezone_test", consent=True, source=source, evidence=source, content={}).code == INVALID_CONTENT
    with pytest.raises(ValueError):
        register_kind("timezone_test", KindRules(normalize=normalize, check_evidence=check))
    with pytest.raises(ValueError):
        register_kind("Bad Name", KindRules(normalize=normalize, check_evidence=check))
    with pytest.raises(KeyError):
        get_kind("nope")
    assert KINDS["preference"].searchable


def test_language_names_normalise_to_codes() -> None:
    cases = {
        "zh": "zh",
        "zh-CN": "zh",
        "中文": "zh",
        "Chinese": "zh",
        "EN": "en",
        "english": "en",
        "en_US": "en",
        "日本語": "ja",
        "Korean": "ko",
        "français": "fr",
        "Deutsch": "de",
        "es-MX": "es",
    }
    for name, code in cases.items():
        assert normalize_language(name) == code
    with pytest.raises(ValueError):
        normalize_language("elvish")


# --- secret detector ----------------------------------------------------------------------------


def kinds(text: str) -> set[str]:
    return {finding.kind for finding in find_secrets(text)}


def test_luhn() -> None:
    assert luhn_valid("4111111111111111")
    assert luhn_valid("378282246310005")  # Amex test number
    assert not luhn_valid("4111111111111112")
    assert not luhn_valid("0000000000000000")


@pytest.mark.parametrize(
    "text",
    [
        "4111111111111111",
        "卡号 4111 1111 1111 1111",
        "card: 4111-1111-1111-1111",
        "Amex 3782 822463 10005",
        "卡号４１１１１１１１１１１１１１１１",
        "4111１１１１1111 1111",  # half full-width: after NFKC the first groups join (an outside check)
        "card 4111 11111111 1111",
    ],
)
def test_card_numbers_with_valid_luhn_are_secrets(text: str) -> None:
    assert "payment_card" in kinds(text)


def test_card_like_numbers_with_invalid_luhn_are_not() -> None:
    assert "payment_card" not in kinds("订单号 4111 1111 1111 1112")
    assert "payment_card" not in kinds("订单号 411111111111 1112")
    assert "payment_card" not in kinds("call 138 0013 8000 at 2024 1207")  # too few digits in all


def test_chinese_resident_id_checksum() -> None:
    assert cn_resident_id_valid("11010519491231002X")
    assert not cn_resident_id_valid("110105194912310021")
    assert "cn_resident_id" in kinds("我的身份证是 11010519491231002X")
    assert "cn_resident_id" not in kinds("编号 110105194912310021")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("my key is sk-abcdefghijklmnopqrstuvwxyz123456", "api_key"),
        ("sk-proj-AbCdEf0123456789GhIjKl", "api_key"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "api_key"),
        ("AKIAIOSFODNN7EXAMPLE", "api_key"),
        ("Authorization: Bearer abc123def456ghi789", "api_key"),
        ("api_key=9f8e7d6c5b4a", "api_key"),
        ("随机串 aB3dE5gH7jK9mN1pQ3sT5vX7zC", "api_key"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private_key"),
        ("password: x", "password"),
        ("My password is hunter2", "password"),
        ("密码是 hunter2", "password"),
        ("登录密码：abc12345", "password"),
        ("SSN 123-45-6789", "us_ssn"),
        ("护照号码 E12345678", "id_number"),
    ],
)
def test_secret_detector_finds(text: str, kind: str) -> None:
    assert kind in kinds(text)


@pytest.mark.parametrize(
    "text",
    [
        "我2024年去了北京，住了3天",
        "In 2024 I moved to Berlin and bought 2 bikes.",
        "订单号 12345，电话 13812345678",
        "请用简短的中文回答我",
        "I forgot my password again",
        "密码是多少？",
        "see https://example.com/release-notes-2024-final-version",
        "the bearer of bad news",
        "会议在 2024-05-06 10:30 开始",
        "",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert not contains_secret(text), find_secrets(text)
