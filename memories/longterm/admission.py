"""Admission rules for long-term memories (SPEC L2; seed 004 "记忆规则与恢复").

A model only *proposes* a memory; whether it is saved is decided here, from facts the model cannot
forge: `consent` comes from the trusted product backend, `evidence` must be a verbatim quote of the
`source` the user wrote, and the evidence itself must state every claimed field. Passwords, keys,
card and ID numbers, chit-chat and guesses are refused with a distinct code.

Pure Python, no Django: the API layer maps a refusal to 422 `rejected_by_policy` with the code.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

NO_CONSENT = "no_consent"
EVIDENCE_NOT_IN_SOURCE = "evidence_not_in_source"
SECRET_DETECTED = "secret_detected"
INVALID_CONTENT = "invalid_content"
NOT_DURABLE_PREFERENCE = "not_durable_preference"
UNKNOWN_KIND = "unknown_kind"
REFUSAL_CODES = frozenset(
    {NO_CONSENT, EVIDENCE_NOT_IN_SOURCE, SECRET_DETECTED, INVALID_CONTENT, NOT_DURABLE_PREFERENCE, UNKNOWN_KIND}
)


@dataclass(frozen=True)
class Admission:
    ok: bool
    reason: str | None = None
    code: str | None = None
    normalized_content: dict | None = None


class Refused(Exception):
    """Raised by kind rules to refuse a write with a code and a human-readable reason."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


# =============================================================================================
# Secret detector
# =============================================================================================


@dataclass(frozen=True)
class SecretFinding:
    kind: str  # password | api_key | private_key | payment_card | cn_resident_id | us_ssn | id_number
    start: int
    end: int


_I = re.IGNORECASE
_QUESTION_VALUE = re.compile(r"^(?:多少|什么|是什么|啥|几|\?|？)")
_PASSWORD_PATTERNS = (
    re.compile(
        r"\b(?:password|passwd|passphrase|passcode|pwd|pin(?:\s*code)?)"
        r"(?:\s+(?:for|to|of|on)\s+[^\s:：=]+)?\s*(?:\bis\b|=|:|：)\s*[\"'“]?(?P<value>[^\s\"'”]+)",
        _I,
    ),
    re.compile(r"(?:密码|密碼|口令|暗码|pin码)\s*(?:是|为|為|:|：|=)\s*[\"'“「]?(?P<value>[^\s\"'”」，。,]+)", _I),
    re.compile(r"(?:密码|密碼|口令)(?P<value>[A-Za-z0-9!@#$%^&*_\-]{4,})"),
)
_KEY_PATTERNS = (
    ("api_key", re.compile(r"(?<![A-Za-z0-9])sk-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_\-]{16,}")),
    ("api_key", re.compile(r"(?<![A-Za-z0-9])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}")),
    ("api_key", re.compile(r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{20,}")),
    ("api_key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("api_key", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("api_key", re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{35}")),
    ("api_key", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    (
        "api_key",
        re.compile(
            r"\b(?:api[_\- ]?key|secret(?:[_\- ]?key)?|client[_\- ]?secret|access[_\- ]?(?:key|token)|"
            r"auth[_\- ]?token|token)\b\s*(?:\bis\b|=|:|：)\s*[\"']?[A-Za-z0-9._~+/=\-]{8,}",
            _I,
        ),
    ),
    ("api_key", re.compile(r"(?:密钥|秘钥|私钥|令牌|口令牌)\s*(?:是|为|:|：|=)\s*[^\s，。,]{6,}")),
)
_BEARER = re.compile(r"\bbearer\s+(?P<value>[A-Za-z0-9._~+/=\-]{8,})", _I)
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{20,}")
_CARD = re.compile(r"(?<![\d-])(?:\d{13,19}|\d{4}([ -])\d{4}\1\d{4}\1\d{1,7}|\d{4}([ -])\d{6}\2\d{4,5})(?![\d])")
_CN_ID = re.compile(
    r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"
)
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_ID_KEYWORD = re.compile(
    r"(?:身份证|身份證|护照|護照|社保号|\bssn\b|\bsocial security(?: number| no\.?)?|\bpassport(?: number| no\.?)?)"
    r"\s*(?:号码|號碼|号|號)?\s*(?:是|为|:|：|#|\bis\b)?\s*[A-Za-z]?\d[\d -]{5,}",
    _I,
)
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"


def luhn_valid(number: str) -> bool:
    """Luhn checksum of a digit string (separators already removed)."""
    if not number.isdigit() or len(set(number)) == 1:  # "0000…" passes Luhn but is no card
        return False
    total = 0
    for position, char in enumerate(reversed(number)):
        digit = int(char)
        if position % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def cn_resident_id_valid(value: str) -> bool:
    """GB 11643 checksum of an 18-character resident identity number."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    total = sum(int(char) * weight for char, weight in zip(value[:17], _CN_ID_WEIGHTS))
    return _CN_ID_CHECK[total % 11] == value[17].upper()


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _looks_random(token: str) -> bool:
    """A long segment mixing letters and digits with high entropy: a key, not a word or slug.

    Slugs ("release-notes-2024") and words are split on separators first: each of their
    segments is all letters or all digits, which random keys almost never are.
    """
    for segment in re.split(r"[-_+/=]", token):
        has_letter = any(c.isalpha() for c in segment)
        has_digit = any(c.isdigit() for c in segment)
        if len(segment) >= 20 and has_letter and has_digit and _entropy(segment) >= 3.3:
            return True
    return False


def _password_findings(text: str) -> Iterator[SecretFinding]:
    for pattern in _PASSWORD_PATTERNS:
        for match in pattern.finditer(text):
            if not _QUESTION_VALUE.match(match.group("value")):  # "密码是多少?" asks, reveals nothing
                yield SecretFinding("password", match.start(), match.end())


def _key_findings(text: str) -> Iterator[SecretFinding]:
    for kind, pattern in _KEY_PATTERNS:
        for match in pattern.finditer(text):
            yield SecretFinding(kind, match.start(), match.end())
    for match in _BEARER.finditer(text):
        value = match.group("value")
        if len(value) >= 16 or any(c.isdigit() for c in value):  # "bearer of bad news" is prose
            yield SecretFinding("api_key", match.start(), match.end())
    for match in _TOKEN.finditer(text):
        if _looks_random(match.group()):
            yield SecretFinding("api_key", match.start(), match.end())


def _number_findings(text: str) -> Iterator[SecretFinding]:
    for match in _CARD.finditer(text):
        if luhn_valid(re.sub(r"[ -]", "", match.group())):
            yield SecretFinding("payment_card", match.start(), match.end())
    for match in _CN_ID.finditer(text):
        if cn_resident_id_valid(match.group()):
            yield SecretFinding("cn_resident_id", match.start(), match.end())
    for match in _SSN.finditer(text):
        yield SecretFinding("us_ssn", match.start(), match.end())
    for match in _ID_KEYWORD.finditer(text):
        yield SecretFinding("id_number", match.start(), match.end())


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret-looking span in `text` (positions refer to the NFKC-normalised text)."""
    if not text:
        return []
    # NFKC: full-width digits and letters ("４１１１…") must not slip past the patterns.
    normalized = unicodedata.normalize("NFKC", text)
    findings = [*_password_findings(normalized), *_key_findings(normalized), *_number_findings(normalized)]
    return sorted(set(findings), key=lambda finding: (finding.start, finding.kind))


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def _texts_of(value: object) -> Iterator[str]:
    """All strings (keys and values) inside a JSON-like value; numbers too, as text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _texts_of(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts_of(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


# =============================================================================================
# Kind registry
# =============================================================================================


@dataclass(frozen=True)
class KindRules:
    """How a kind is admitted.

    normalize(content) -> normalized dict; raise ValueError (→ invalid_content) or Refused.
    check_evidence(evidence, normalized) -> None; raise Refused when the quote does not support it.
    """

    normalize: Callable[[object], dict]
    check_evidence: Callable[[str, dict], None]
    searchable: bool = False


_KINDS: dict[str, KindRules] = {}
KINDS: Mapping[str, KindRules] = MappingProxyType(_KINDS)
_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def register_kind(name: str, rules: KindRules, *, replace: bool = False) -> None:
    if not _KIND_NAME.match(name):
        raise ValueError(f"invalid kind name {name!r}")
    if name in _KINDS and not replace:
        raise ValueError(f"kind {name!r} is already registered")
    _KINDS[name] = rules


def get_kind(name: str) -> KindRules:
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown memory kind {name!r}") from None


# =============================================================================================
# The built-in `preference` kind
# =============================================================================================

# code -> (names accepted in content, words that mention the language in evidence)
_LANGUAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "zh": (
        (
            "chinese",
            "mandarin",
            "中文",
            "汉语",
            "漢語",
            "华语",
            "華語",
            "普通话",
            "普通話",
            "国语",
            "國語",
            "简体中文",
            "繁体中文",
            "繁體中文",
        ),
        (
            "中文",
            "汉语",
            "漢語",
            "华语",
            "華語",
            "普通话",
            "普通話",
            "国语",
            "國語",
            "中国话",
            "简体",
            "繁体",
            "繁體",
            "chinese",
            "mandarin",
        ),
    ),
    "en": (("english", "英文", "英语", "英語"), ("英文", "英语", "英語", "english")),
    "ja": (("japanese", "日语", "日文", "日本语", "日本語"), ("日语", "日文", "日本语", "日本語", "japanese")),
    "ko": (
        ("korean", "韩语", "韓語", "韩文", "韓文", "한국어", "朝鲜语"),
        ("韩语", "韓語", "韩文", "韓文", "한국어", "朝鲜语", "korean"),
    ),
    "fr": (
        ("french", "français", "francais", "法语", "法文", "法語"),
        ("法语", "法文", "法語", "french", "français", "francais"),
    ),
    "de": (("german", "deutsch", "德语", "德文", "德語"), ("德语", "德文", "德語", "german", "deutsch")),
    "es": (
        ("spanish", "español", "espanol", "西班牙语", "西班牙文", "西班牙語"),
        ("西班牙语", "西班牙文", "西班牙語", "spanish", "español", "espanol"),
    ),
    "ru": (("russian", "русский", "俄语", "俄文", "俄語"), ("俄语", "俄文", "俄語", "russian", "русский")),
    "it": (("italian", "italiano", "意大利语", "意大利文"), ("意大利语", "意大利文", "italian", "italiano")),
    "pt": (
        ("portuguese", "português", "portugues", "葡萄牙语", "葡萄牙文"),
        ("葡萄牙语", "葡萄牙文", "portuguese", "português", "portugues"),
    ),
}
_LANGUAGE_ALIASES = {name: code for code, (names, _) in _LANGUAGES.items() for name in (code, *names)}
_DETAIL_VALUES = ("brief", "normal", "detailed")
_PREFERENCE_KEYS = frozenset({"language", "detail", "text"})
MAX_TEXT_CHARS = 500


def normalize_language(value: str) -> str:
    """'zh-CN' / 'Chinese' / '中文' -> 'zh'; ValueError for an unsupported language."""
    cleaned = unicodedata.normalize("NFKC", value).strip().lower()
    code = _LANGUAGE_ALIASES.get(cleaned) or _LANGUAGE_ALIASES.get(re.split(r"[-_]", cleaned)[0])
    if code is None:
        raise ValueError(f"unsupported language {value!r} (supported: {', '.join(sorted(_LANGUAGES))})")
    return code


def _normalize_preference(content: object) -> dict:
    if not isinstance(content, Mapping):
        raise ValueError("content must be an object")
    unknown = set(content) - _PREFERENCE_KEYS
    if unknown:
        raise ValueError(f"unknown content keys: {', '.join(sorted(map(str, unknown)))}")
    present = {key: value for key, value in content.items() if value is not None}
    normalized: dict = {}
    if "language" in present:
        if not isinstance(present["language"], str):
            raise ValueError("language must be a string")
        normalized["language"] = normalize_language(present["language"])
    if "detail" in present:
        detail = present["detail"]
        if not isinstance(detail, str) or detail.strip().lower() not in _DETAIL_VALUES:
            raise ValueError("detail must be one of: brief, normal, detailed")
        normalized["detail"] = detail.strip().lower()
    if not normalized:
        raise ValueError("a preference needs at least one of language or detail")
    if "text" in present:
        text = present["text"]
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"text must be a non-empty string of at most {MAX_TEXT_CHARS} characters")
        normalized["text"] = text.strip()
    return normalized


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), _I)


# A preference/instruction cue: the user tells the assistant how to answer from now on.
_CUE = _rx(
    r"喜欢",
    r"希望",
    r"请(?!问)",
    r"偏好",
    r"偏爱",
    r"习惯",
    r"要求",
    r"更愿意",
    r"倾向",
    r"以后",
    r"今后",
    r"往后",
    r"总是",
    r"一直",
    r"始终",
    r"每次",
    r"永远",
    r"务必",
    r"麻烦",
    r"记住",
    r"默认",
    r"统一",
    r"尽量",
    r"都用",
    r"用.{0,8}?(?:回答|回复|答复|作答)",
    r"(?:和|跟|与|对)我.{0,8}?(?:交流|沟通|聊|对话|说)",
    r"(?:一点|一些)(?:吧|哦)?(?:$|[，,。.!！])",
    r"就好",
    r"就行",
    r"就可以",
    r"\bprefer(?:s|red)?\b",
    r"\bplease\b",
    r"\balways\b",
    r"\bfrom now on\b",
    r"\bgoing forward\b",
    r"\bby default\b",
    r"\bin (?:the )?future\b",
    r"\b(?:reply|respond|answer)\s+(?:to me\s+)?(?:only\s+)?in\b",
    r"\b(?:write|talk|speak|communicate|chat)\s+(?:to|with)\s+me\s+(?:only\s+)?in\b",
    r"\bi(?:'d| would)? like\b",
    r"\bi want\b",
    r"\bkeep (?:it|answers|replies|responses)\b",
    r"\bbe (?:more )?(?:brief|concise|short|detailed|thorough)\b",
)
_GUESS = _rx(
    r"可能",
    r"也许",
    r"大概",
    r"好像",
    r"猜",
    r"似乎",
    r"或许",
    r"估计",
    r"说不定",
    r"不确定",
    r"\bmaybe\b",
    r"\bprobably\b",
    r"\bperhaps\b",
    r"\bpossibly\b",
    r"\bmight\b",
    r"\bi guess\b",
    r"\bi suppose\b",
    r"\bnot sure\b",
    r"\bseems?\b",
)
# "as brief as possible" is an instruction, not a guess.
_NOT_GUESS = _rx(r"尽可能", r"可能的话", r"如果可能", r"\bas possible\b", r"\bif possible\b")
_TEMPORARY = _rx(
    r"这次",
    r"这一次",
    r"本次",
    r"这回",
    r"今天",
    r"今晚",
    r"暂时",
    r"临时",
    r"这句",
    r"这段",
    r"翻译",
    r"\bjust this once\b",
    r"\bthis time\b",
    r"\bfor now\b",
    r"\btoday\b",
    r"\bright now\b",
    r"\btranslate\b",
    r"\bthis sentence\b",
)
_DURABLE_START = _rx(r"从今天(?:起|开始)", r"今天起", r"从现在(?:起|开始)", r"\bfrom today on\b", r"\bfrom now on\b")
_CHITCHAT = _rx(
    r"^(?:你好|您好|嗨|哈喽|哈啰|早上好|早安|午安|晚上好|晚安|谢谢|多谢|哈+|呵呵|嗯+|好的|ok|okay|hi|hello|hey|"
    r"thanks|thank you|lol|haha+|good (?:morning|night|evening))[\s!！.。~～,，?？]*$",
    r"天气",
    r"\bweather\b",
)
_DETAIL_CUES = {
    "brief": _rx(
        r"简短",
        r"简洁",
        r"简要",
        r"简明",
        r"简单(?:点|一点|一些|些)",
        r"短(?:一)?(?:点|些)",
        r"精简",
        r"言简意赅",
        r"长话短说",
        r"一句话",
        r"不要太长",
        r"别太长",
        r"不要啰嗦",
        r"别啰嗦",
        r"少废话",
        r"\bbrief(?:ly)?\b",
        r"\bconcise(?:ly)?\b",
        r"\bshort(?:er)?\b",
        r"\bsuccinct(?:ly)?\b",
        r"\bterse\b",
        r"\bto the point\b",
        r"\bnot too long\b",
    ),
    "normal": _rx(
        r"适中",
        r"适度",
        r"正常长度",
        r"不长不短",
        r"中等",
        r"\bnormal\b",
        r"\bmoderate(?:ly)?\b",
        r"\bmedium\b",
        r"\bbalanced\b",
    ),
    "detailed": _rx(
        r"详细",
        r"详尽",
        r"具体(?:一点|些)",
        r"展开讲",
        r"深入",
        r"\bdetailed\b",
        r"\bin detail\b",
        r"\bthorough(?:ly)?\b",
        r"\bin[- ]depth\b",
        r"\bcomprehensive(?:ly)?\b",
        r"\belaborate\b",
    ),
}
_CLAUSE_END = re.compile(r"[，,。.!！?？;；:：\n]")
_ZH_NEGATION = re.compile(r"不|别|没|勿|莫|无需|无须|甭")
_EN_NEGATION = re.compile(r"^(?:don'?t|do|not|never|no|stop|avoid|without|isn'?t|aren'?t)$", _I)


def _negated(text: str, start: int) -> bool:
    """Is the mention at `start` negated within its own clause ("不要用英文", "don't be brief")?"""
    clause = _CLAUSE_END.split(text[:start])[-1]
    if _ZH_NEGATION.search(clause[-4:]):
        return True
    words = re.findall(r"[A-Za-z']+", clause)[-3:]
    return any(_EN_NEGATION.match(word) for word in words)


def _mentions(pattern: re.Pattern[str], text: str) -> tuple[bool, bool]:
    """(affirmed, negated): whether `pattern` occurs un-negated / negated in `text`."""
    affirmed = negated = False
    for match in pattern.finditer(text):
        if _negated(text, match.start()):
            negated = True
        else:
            affirmed = True
    return affirmed, negated


def _language_pattern(code: str) -> re.Pattern[str]:
    words = _LANGUAGES[code][1]
    return _rx(*(rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w) for w in words))


def _check_language(evidence: str, code: str) -> None:
    affirmed, negated = _mentions(_language_pattern(code), evidence)
    if affirmed:
        return
    if negated:
        raise Refused(NOT_DURABLE_PREFERENCE, f"the evidence asks not to use language {code!r}")
    raise Refused(NOT_DURABLE_PREFERENCE, f"the evidence does not mention language {code!r}")


def _stated_details(evidence: str) -> set[str]:
    stated = set()
    for value, pattern in _DETAIL_CUES.items():
        affirmed, negated = _mentions(pattern, evidence)
        if affirmed:
            stated.add(value)
        if negated and value == "detailed":  # "不要太详细" / "don't be too detailed" asks for brevity
            stated.add("brief")
    return stated


def _check_detail(evidence: str, detail: str) -> None:
    stated = _stated_details(evidence)
    if detail not in stated:
        raise Refused(NOT_DURABLE_PREFERENCE, f"the evidence does not ask for {detail!r} answers")
    if len(stated) > 1:
        raise Refused(NOT_DURABLE_PREFERENCE, f"the evidence states conflicting detail levels: {sorted(stated)}")


def _check_preference_evidence(evidence: str, normalized: dict) -> None:
    text = unicodedata.normalize("NFKC", evidence).strip()
    if _CHITCHAT.search(text) and not _CUE.search(text):
        raise Refused(NOT_DURABLE_PREFERENCE, "chit-chat is not a durable preference")
    if _GUESS.search(_NOT_GUESS.sub(" ", text)):
        raise Refused(NOT_DURABLE_PREFERENCE, "the evidence is a guess, not a stated preference")
    if _TEMPORARY.search(_DURABLE_START.sub(" ", text)):
        raise Refused(NOT_DURABLE_PREFERENCE, "the evidence is a one-off request, not a durable preference")
    if not _CUE.search(text):
        raise Refused(NOT_DURABLE_PREFERENCE, "the evidence states no preference or instruction")
    if "language" in normalized:
        _check_language(text, normalized["language"])
    if "detail" in normalized:
        _check_detail(text, normalized["detail"])


PREFERENCE = KindRules(normalize=_normalize_preference, check_evidence=_check_preference_evidence, searchable=True)
register_kind("preference", PREFERENCE)


# =============================================================================================
# admit()
# =============================================================================================


def _refuse(code: str, reason: str) -> Admission:
    return Admission(ok=False, reason=reason, code=code)


def _secret_in(source: str, evidence: str, content: object) -> str | None:
    for label, texts in (("source", [source]), ("evidence", [evidence]), ("content", list(_texts_of(content)))):
        for text in texts:
            findings = find_secrets(text)
            if findings:
                return f"{findings[0].kind} detected in {label}"  # never echo the secret itself
    return None


def admit(kind: str, *, consent: object, source: object, evidence: object, content: object) -> Admission:
    """Decide whether a proposed long-term memory may be saved; see the module docstring."""
    rules = _KINDS.get(kind) if isinstance(kind, str) else None
    if rules is None:
        return _refuse(UNKNOWN_KIND, f"unknown memory kind {kind!r}")
    if consent is not True:  # only an explicit boolean from the trusted backend counts
        return _refuse(NO_CONSENT, "saving a memory needs consent: true from the product; the model cannot grant it")
    if not isinstance(evidence, str) or not evidence.strip():
        return _refuse(EVIDENCE_NOT_IN_SOURCE, "evidence must be a non-empty verbatim quote of the source")
    if not isinstance(source, str) or evidence not in source:
        return _refuse(EVIDENCE_NOT_IN_SOURCE, "evidence does not occur verbatim in the source")
    secret = _secret_in(source, evidence, content)
    if secret:
        return _refuse(SECRET_DETECTED, f"secrets are never saved: {secret}")
    try:
        normalized = rules.normalize(content)
        rules.check_evidence(evidence, normalized)
    except Refused as refusal:
        return _refuse(refusal.code, refusal.reason)
    except ValueError as exc:
        return _refuse(INVALID_CONTENT, str(exc))
    return Admission(ok=True, normalized_content=normalized)


__all__ = [
    "EVIDENCE_NOT_IN_SOURCE",
    "INVALID_CONTENT",
    "KINDS",
    "NOT_DURABLE_PREFERENCE",
    "NO_CONSENT",
    "PREFERENCE",
    "REFUSAL_CODES",
    "SECRET_DETECTED",
    "UNKNOWN_KIND",
    "Admission",
    "KindRules",
    "Refused",
    "SecretFinding",
    "admit",
    "cn_resident_id_valid",
    "contains_secret",
    "find_secrets",
    "get_kind",
    "luhn_valid",
    "normalize_language",
    "register_kind",
]
