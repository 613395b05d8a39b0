"""Refuse for a reason, admit otherwise (issue 26): one detector per reason, claims read through typos,
synonyms and compounds, secrets by context, and each reason's code in the 422's `details.reason`."""

from __future__ import annotations

import pytest

from memories.longterm.admission import NOT_DURABLE_PREFERENCE, REFUSAL_REASONS, SECRET_DETECTED, admit
from memories.longterm.admission import reasons as rs
from memories.longterm.admission.lexicon import correct, correct_word, osa_distance
from memories.longterm.admission.secrets import find_secrets
from memories.longterm.admission.statements import normalize_text
from memories.longterm.models import AdmissionRefusal, LongTermMemory
from tests.longterm.support import memories_url
from tests.support.api import assert_envelope


def rules(evidence: str, content: dict):
    return admit("preference", consent=True, source=evidence, evidence=evidence, content=content, judge=None)


def n(text: str) -> str:
    return normalize_text(text)


def test_a_standing_marker_about_the_users_life_or_quoted_does_not_make_a_request_standing() -> None:
    assert rs.has_durable_marker(n("I always want answers in English."))
    assert rs.has_durable_marker(n("From now on, English please."))
    assert not rs.has_durable_marker(n("Summarize this article briefly; I'm always short on time."))
    assert not rs.has_durable_marker(n("Explain 'from now on' in Chinese."))


# --- one detector per reason ----------------------------------------------------------------------

DETECTORS = {
    "past": (
        rs.is_past,
        [
            "I used to want long answers.",
            "Back in college I preferred English.",
            "我以前喜欢详细的回答",
            "上大学的时候我喜欢英文",
            "以前我 prefer English answers",
        ],
        [
            "I'm used to English, answer in English.",
            "Please write back in Spanish.",
            "I used to like Chinese, but now I want English.",
            "以后请用中文",
        ],
    ),
    "hypothetical": (
        rs.is_hypothetical,
        [
            "If I were a beginner, I'd want detailed answers.",
            "Suppose I was learning Chinese.",
            "如果我是初学者，我会想要详细的回答",
            "假如我去日本工作",
            "If I were 学生, I'd want 详细的回答",
        ],
        [
            "If I write in Chinese, answer in Chinese.",
            "I'd like short answers if possible.",
            "如果我用英文问，你就用英文回答",
        ],
    ),
    "temporary": (
        rs.is_temporary,
        [
            "Today, please answer in English.",
            "For this session, keep answers brief.",
            "今天请用英文回答",
            "这周回答都简短一点",
            "暂时用中文回答我",
            "just for now reply in 中文",
        ],
        [
            "From today on, answer in English.",
            "从今天起都用英文回答我",
            "Answer briefly.",
            "I've been using you for a while; keep it short.",
        ],
    ),
    "question": (
        rs.is_question,
        [
            "Do you speak Japanese?",
            "Which language do you like best?",
            "你会说日语吗？",
            "用中文还是英文比较好？",
            "你会 speak English 吗",
            "Would you prefer I write in English?",
            "Wait, do you only reply in English?",
            "So you can do detailed answers?",
            "I was wondering if you could speak Chinese?",
            "请问你支持中文回答吗",
            "简短回答行不行啊，你觉得？",
        ],
        [
            "Could you reply in English from now on?",
            "能不能用中文回答？",
            "Can you always answer me in Japanese?",
            "可以用中文回答吗？",
            "Please answer in English.",
            "Wait, could you answer in English from now on?",
            "回答简短一点，行吗？",
        ],
    ),
    "no_statement": (
        rs.states_nothing,
        [
            "Thanks! That detailed explanation was helpful.",
            "Nice, short and sweet. Thanks!",
            "Good morning! Just saying hi in English.",
            "ok cool, English it is lol jk",
            "哈哈，谢谢你的详细解释，不错。",
            "用中文回答吧，开玩笑的。",
        ],
        [
            "Concise replies, thanks.",
            "中文回复就可以，谢谢。",
            "Thanks, keep it short like that from now on.",
            "No kidding, please always answer in English.",
            "It would be nice to get longer, more detailed answers.",
        ],
    ),
    "one_off (content)": (
        rs.asks_about_content,
        [
            "In detail, what happened in 1989?",
            "Quickly, in English: how do I boil an egg?",
            "Explain 'from now on' in Chinese.",
        ],
        ["Keep it short, please.", "English from now on, okay?", "请用中文回答，可以吗？"],
    ),
    "hedge": (
        lambda text: bool(rs.HEDGE_MORE.search(text)),
        [
            "Kind of leaning towards brief replies.",
            "Not sure, but short answers.",
            "我不太确定，中文吧",
            "说不准，可能英文吧",
            "I'm not certain 中文 is better",
        ],
        ["Keep it short.", "以后请用中文", "I'm sure: English only."],
    ),
    "other_person": (
        rs.speaks_of_someone_else,
        [
            "My wife prefers answers in Chinese.",
            "Tom always wants detailed explanations.",
            "我老婆喜欢你用中文回答",
            "小明喜欢详细的回答",
            "My mom 喜欢中文回答",
            "Everyone on my team likes brief answers.",
        ],
        ["Reply in English so my colleague can read it.", "I prefer English.", "以后请用中文回答我"],
    ),
}


@pytest.mark.parametrize("reason", sorted(DETECTORS))
def test_each_detector_finds_its_reason_in_english_chinese_and_mixed_and_not_in_instructions(reason) -> None:
    detector, positives, negatives = DETECTORS[reason]
    assert [text for text in positives if not detector(n(text))] == []
    assert [text for text in negatives if detector(n(text))] == []


REFUSED = [
    ("I used to want long, detailed answers back when I was a student.", {"detail": "detailed"}, "past"),
    ("我以前喜欢详细的回答，现在无所谓", {"detail": "detailed"}, "past"),
    ("If I were a beginner, I'd want detailed answers.", {"detail": "detailed"}, "hypothetical"),
    ("假如我去日本工作，我会希望你用日语回答。", {"language": "ja"}, "hypothetical"),
    ("Today, please answer in English.", {"language": "en"}, "temporary"),
    ("这次对话里请详细解释。", {"detail": "detailed"}, "temporary"),
    ("Do you speak Japanese?", {"language": "ja"}, "question"),
    ("简短的回答是不是更好？", {"detail": "brief"}, "question"),
    ("Maybe I prefer shorter answers?", {"detail": "brief"}, "hedge"),
    ("我好像更喜欢简短的回答", {"detail": "brief"}, "hedge"),
    ("My colleague likes short replies.", {"detail": "brief"}, "other_person"),
    ("我同事希望回答都用英文。", {"language": "en"}, "other_person"),
    ("Translate this paragraph into English.", {"language": "en"}, "one_off"),
    ("给我讲讲量子力学，详细点", {"detail": "detailed"}, "one_off"),
    ("Don't answer in English.", {"language": "en"}, "negation"),
    ("英文的回答我看不懂。", {"language": "en"}, "negation"),
    ("I love Chinese food.", {"language": "zh"}, "no_statement"),
    ("Thank you for the detailed answer!", {"detail": "detailed"}, "no_statement"),
    ("中英文都可以", {"language": "en"}, "no_statement"),
    ("Use English with me.", {"language": "zh"}, "not_stated"),
    ("Nice, short and sweet. Thanks!", {"detail": "brief"}, "no_statement"),
    ("Say it again in English.", {"language": "en"}, "one_off"),
    ("Summarize this article briefly; I'm always short on time.", {"detail": "brief"}, "one_off"),
    ("麻烦把答案改成英文。", {"language": "en"}, "one_off"),
    ("Wait, do you only reply in English?", {"language": "en"}, "question"),
    ("请问你支持中文回答吗", {"language": "zh"}, "question"),
]


@pytest.mark.parametrize(("evidence", "claims", "reason"), REFUSED)
def test_each_refusal_names_its_reason(evidence, claims, reason) -> None:
    result = rules(evidence, claims)
    assert (result.ok, result.code, result.cause) == (False, NOT_DURABLE_PREFERENCE, reason), result.reason
    assert result.cause in REFUSAL_REASONS and result.decision["reason"] == reason


# --- claims read through real writing ------------------------------------------------------------

ADMITTED = [
    ("I only understand English.", {"language": "en"}),
    ("Way too wordy, cut it down going forward.", {"detail": "brief"}),
    ("Answers that are too short annoy me, so go deeper.", {"detail": "detailed"}),
    ("Keep your replies to a paragraph.", {"detail": "brief"}),
    ("Concise replies, thanks.", {"detail": "brief"}),
    # the issue's refused phrasings, and typos of the claimed words
    ("以后请用中文回答，并详细解释每一步。", {"language": "zh", "detail": "detailed"}),
    (
        "Reply in Chinese from now on, and walk me through every step in detail.",
        {"language": "zh", "detail": "detailed"},
    ),
    ("Give me detailed answers in a formal tone from now on.", {"detail": "detailed"}),
    ("From now on, please answer in English in a warm, friendly and casual tone.", {"language": "en"}),
    ("Stop writing essays and keep it brief.", {"detail": "brief"}),
    ("I personally like detailed answers.", {"detail": "detailed"}),
    ("Keep every answer to two or three sentences max, from now on.", {"detail": "brief"}),
    ("pls 以后都用中文回答 thx", {"language": "zh"}),
    ("以后都拿中文回我吧，拜托了🙏", {"language": "zh"}),
    ("It would help me a lot if you always wrote your answers in English.", {"language": "en"}),
    ("alwasy reply in englsh, and keep it breif", {"language": "en", "detail": "brief"}),
    ("以后请用中闻回答我", {"language": "zh"}),
    ("shrot answers from now on plz", {"detail": "brief"}),
    ("consice answers only", {"detail": "brief"}),
    ("Detialed answers please.", {"detail": "detailed"}),
    # synonyms and compounds
    ("回答讲透彻一点", {"detail": "detailed"}),
    ("深入一点讲", {"detail": "detailed"}),
    ("回答简洁明了", {"detail": "brief"}),
    ("Don't hold back on details.", {"detail": "detailed"}),
    ("Short answers suit me better than long ones.", {"detail": "brief"}),
    ("回答长度适中就好，不用太长也不用太短。", {"detail": "normal"}),
    ("ＵＳＥ　ＥＮＧＬＩＳＨ　ＰＬＥＡＳＥ", {"language": "en"}),  # full-width
    ("This matters to me: always answer in English.", {"language": "en"}),  # scope words as context
]


@pytest.mark.parametrize(("evidence", "claims"), ADMITTED)
def test_clear_preferences_in_real_writing_are_admitted(evidence, claims) -> None:
    result = rules(evidence, claims)
    assert result.ok, (result.cause, result.reason)
    assert result.normalized_content == claims


@pytest.mark.parametrize(
    ("typo", "word"),
    [
        ("englsh", "english"),
        ("alwasy", "always"),
        ("breif", "brief"),
        ("shrot", "short"),
        ("consice", "concise"),
        ("detialed", "detailed"),
        ("japanse", "japanese"),
        ("repsond", "respond"),
    ],
)
def test_typos_fold_to_the_lexicon_word(typo, word) -> None:
    assert correct_word(typo) == word


@pytest.mark.parametrize("word", ["grief", "trench", "through", "replay", "retail", "exhausting", "comprehension"])
def test_real_words_next_to_lexicon_words_are_left_alone(word) -> None:
    assert correct_word(word) == word


def test_pinyin_homophones_of_claim_words_fold_and_ordinary_words_do_not() -> None:
    assert correct("以后请用中闻回答我") == "以后请用中文回答我"
    assert correct("请用英闻回答，要祥细") == "请用英文回答，要详细"
    assert correct("时间短，相应文件") == "时间短，相应文件"


def test_osa_distance_counts_a_swap_as_one_edit() -> None:
    assert osa_distance("breif", "brief") == 1 and osa_distance("englsh", "english") == 1
    assert osa_distance("kitten", "sitting", limit=5) == 3


# --- secrets by context ---------------------------------------------------------------------------

SECRETS_BY_CONTEXT = [
    "以后都用中文回答，我的银行卡号是6222 0215 8834 1907 551",  # a valid UnionPay number
    "卡号：6222021588341907",
    "账号 12345678",
    "my PIN is 4821",
    "CVV 123",
    "card no. 6222 0215 8834",
    "my bank account number is 00123456",
    "密码 is hunter2",
    "我的 password 是 hunter2",
    "验证码是 483920",
    "my api key: abcd1234efgh",
    "the token is abcdEFGH9",
    "key: 9f8e7d6c5b",
    "my seed phrase is apple banana",
    "passport E12345678",
    "sk_live_abcdefghijklmnop1234",
]


@pytest.mark.parametrize("text", SECRETS_BY_CONTEXT)
def test_a_value_introduced_as_a_card_account_id_password_token_or_key_is_a_secret(text) -> None:
    assert find_secrets(text)
    result = rules(f"请用中文回答。{text}", {"language": "zh"})
    assert (result.ok, result.code) == (False, SECRET_DETECTED)


@pytest.mark.parametrize(
    "text",
    [
        "The key point is brevity.",
        "I work in account management, answer in English.",
        "密码是多少？",
        "Keep answers under 100 words.",
        "Answer in English, code examples in python3 please.",
        "我的卡号是多少？",
        "I have a credit card.",
    ],
)
def test_words_of_secrets_without_a_value_are_not_secrets(text) -> None:
    assert not find_secrets(text)


# --- through HTTP: every reason is 422 with details.reason, and an operator sees it ---------------

HTTP_CASES = [(evidence, claims, reason) for evidence, claims, reason in REFUSED]


@pytest.mark.django_db
@pytest.mark.parametrize("reason", sorted(REFUSAL_REASONS))
def test_every_refusal_reason_is_a_422_with_its_code_in_details_reason(alice, reason) -> None:
    evidence, claims, _ = next(case for case in HTTP_CASES if case[2] == reason)
    body = {"kind": "preference", "content": claims, "evidence": evidence, "source": evidence, "consent": True}
    error = assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert error["details"]["reason"] == reason
    assert error["details"]["code"] == NOT_DURABLE_PREFERENCE
    assert not LongTermMemory.objects.exists()
    refusal = AdmissionRefusal.objects.get()
    assert refusal.code == NOT_DURABLE_PREFERENCE and refusal.decision["reason"] == reason


@pytest.mark.django_db
def test_the_admin_refusal_list_shows_why(admin_client, alice) -> None:
    for evidence, claims, _ in HTTP_CASES[:4]:
        body = {"kind": "preference", "content": claims, "evidence": evidence, "source": evidence, "consent": True}
        assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    page = admin_client.get("/admin/longterm/admissionrefusal/").content.decode()
    assert "why (details.reason)" in page.lower()
    assert page.count('class="field-refusal_reason">past<') == 2
    assert page.count('class="field-refusal_reason">hypothetical<') == 2


@pytest.mark.django_db
def test_a_secret_by_context_is_refused_through_http_and_nothing_of_it_is_kept(alice) -> None:
    source = "以后都用中文回答，我的银行卡号是6222 0215 8834 1907 551"
    body = {"kind": "preference", "content": {"language": "zh"}, "evidence": source, "source": source, "consent": True}
    error = assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert error["details"]["reason"] == SECRET_DETECTED and "code" not in error["details"]
    assert "6222" not in error["message"]
    refusal = AdmissionRefusal.objects.get()
    assert refusal.evidence == "" and refusal.content is None and "6222" not in refusal.reason
    assert not LongTermMemory.objects.exists()
