"""The secret detector: passwords, keys, card and ID numbers are never saved (docs/long-term-memories.md)."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretFinding:
    kind: str  # password | api_key | private_key | payment_card | cn_resident_id | us_ssn | id_number | account_number
    start: int
    end: int


_I = re.IGNORECASE
_QUESTION_VALUE = re.compile(r"^(?:是|为)?(?:多少|什么|是什么|啥|几|\?|？)")
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
    ("api_key", re.compile(r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("api_key", re.compile(r"(?<![A-Za-z0-9])(?:glpat-|npm_|hf_|ya29\.)[A-Za-z0-9_\-]{16,}")),
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
_CARD = re.compile(
    r"(?<![\d-])(?:\d{13,19}|\d{4}([ -])\d{4}\1\d{4}\1\d{1,7}(?:\1\d{1,4})?|\d{4}([ -])\d{6}\2\d{4,5})(?![\d])"
)
# Any grouping of 3+ digit groups (a number typed half in full-width digits joins groups: "4111１１１１1111 1111"
# is "411111111111 1111" after NFKC); only 13-19 digits in all with a valid Luhn sum count (_number_findings).
_CARD_GROUPED = re.compile(r"(?<![\d-])\d{3,}(?:[ -]\d{3,}){1,5}(?![\d])")
_CN_ID = re.compile(
    r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"
)
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_ID_KEYWORD = re.compile(
    r"(?:身份证|身份證|护照|護照|社保号|\bssn\b|\bsocial security(?: number| no\.?)?|\bpassport(?: number| no\.?)?)"
    r"\s*(?:号码|號碼|号|號)?\s*(?:是|为|:|：|#|\bis\b)?\s*[A-Za-z]?\d[\d -]{5,}",
    _I,
)
# Secrets by context: a number or string introduced as a card, account, ID, password, token or key is a
# secret whatever its checksum or length ("我的银行卡号是6222 0215 8834 1907 551", "PIN: 4821").
_NUMBER_WORDS = (
    r"(?:credit |debit |bank |visa |master ?card |amex |id |membership |member |library |sim )?"
    r"card(?:\s*(?:number|no\.?|num|#))?|"
    r"(?:bank |checking |savings |brokerage )?account(?:\s*(?:number|no\.?|num|#))?|"
    r"acct|iban|swift|bic|routing(?: number)?|"
    r"sort code|cvv2?|cvc|security code|ssn|social security(?: number| no\.?)?|passport(?: number| no\.?)?|"
    r"(?:national |tax |personal |student |employee )?id(?: number| no\.?| #)|"
    r"(?:driver'?s? )?licen[cs]e(?: number| no\.?)|tax (?:number|file number)|"
    r"verification code|one[- ]time (?:code|password)|otp|2fa code|auth(?:entication)? code|login code|"
    r"(?:national insurance|nhs|medicare|insurance|policy|member|customer|user|aadhaar|sin)\s*(?:number|no\.?|id|#)"
)
_NUMBER_WORDS_ZH = (
    r"银行卡|信用卡|储蓄卡|借记卡|银行账号|银行帐号|卡号|账号|帐号|账户|帐户|户头|开户行?|身份证|身份證|证件号|护照|護照|"
    r"社保|医保|驾照|驾驶证|学号|工号|验证码|安全码|校验码|动态码|qq号?|微信号|支付宝|工行|建行|招行|农行|中行|卡的?后四位"
)
_STRING_WORDS = (
    r"password|passwd|passphrase|passcode|pass code|pwd|pin(?:\s*(?:code|number))?|api[ _-]?key|apikey|"
    r"(?:secret|access|private|auth|session|bearer|refresh|api|github|openai|aws|stripe)[ _-]?(?:key|token)|"
    r"token|client[ _-]?secret|credentials?|seed phrase|recovery phrase|mnemonic|wallet (?:seed|key)|pw|p/w"
)
# Words that introduce a secret only when the value looks like one (has a digit): "the key is 9f8e7d6c",
# not "the key is brevity".
_WEAK_WORDS = r"key|secret|pass"
_STRING_WORDS_ZH = r"密码|密碼|口令|密钥|秘钥|私钥|令牌|支付密码|登录密码|pin码"
_EN_FILLER = r"(?:\s+(?!is\b|was\b|are\b)[a-z'’.]+){0,4}?"
_CONNECTOR = r"\s*(?:'s|\bis\b|\bwas\b|\bare\b|=|:|：|-|#|→|->|是|为|為)?\s*[\"'“「(]?"
_STRICT_CONNECTOR = r"\s*(?:'s|\bis\b|\bwas\b|=|:|：|是|为|為)\s*[\"'“「(]?"
_END = r"(?![a-z])"
_NUMBER_VALUE = r"(?P<value>[a-z]{0,3}\d[\d\s.\-/]*\d[a-z0-9]*|\d{3,})"
_STRING_VALUE = r"(?P<value>[^\s\"'”」)，。,;；?？]{4,})"
_CHARS = r"[a-z0-9!@#$%^&*_.\-]"
_WITH_DIGIT = rf"(?P<value>(?={_CHARS}{{4,}}){_CHARS}*\d{_CHARS}*)"  # "hunter22", "4821"
_WITH_DIGIT_AND_LETTER = rf"(?P<value>(?={_CHARS}{{6,}})(?={_CHARS}*\d)(?={_CHARS}*[a-z]){_CHARS}+)"
_CONTEXT_PATTERNS = (
    ("account_number", re.compile(rf"\b(?:{_NUMBER_WORDS}){_END}{_EN_FILLER}{_CONNECTOR}{_NUMBER_VALUE}", _I)),
    ("account_number", re.compile(rf"(?:{_NUMBER_WORDS_ZH})[^\d\n，。,.!！?？;；]{{0,10}}?{_NUMBER_VALUE}", _I)),
    ("password", re.compile(rf"\b(?:{_STRING_WORDS}){_END}{_EN_FILLER}{_STRICT_CONNECTOR}{_STRING_VALUE}", _I)),
    ("password", re.compile(rf"\b(?:{_STRING_WORDS}){_END}{_EN_FILLER}{_CONNECTOR}{_WITH_DIGIT}", _I)),
    ("password", re.compile(rf"\b(?:{_WEAK_WORDS}){_END}{_EN_FILLER}{_CONNECTOR}{_WITH_DIGIT_AND_LETTER}", _I)),
    (
        "password",
        re.compile(
            rf"(?:{_STRING_WORDS_ZH})(?:[^\n，。,.!！?？;；a-z0-9]{{0,6}}?|\s*(?:is|was)\s*){_STRING_VALUE}", _I
        ),
    ),
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
    for match in _CARD_GROUPED.finditer(text):
        digits = re.sub(r"[ -]", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            yield SecretFinding("payment_card", match.start(), match.end())
    for match in _CN_ID.finditer(text):
        if cn_resident_id_valid(match.group()):
            yield SecretFinding("cn_resident_id", match.start(), match.end())
    for match in _SSN.finditer(text):
        yield SecretFinding("us_ssn", match.start(), match.end())
    for match in _ID_KEYWORD.finditer(text):
        yield SecretFinding("id_number", match.start(), match.end())


def _value_is_digits_enough(kind: str, value: str) -> bool:
    """A number introduced as a card, account or ID needs a few digits (3 for a CVV)."""
    return sum(c.isdigit() for c in value) >= 3 if kind == "account_number" else True


def _context_findings(text: str) -> Iterator[SecretFinding]:
    for kind, pattern in _CONTEXT_PATTERNS:
        for match in pattern.finditer(text):
            value = match.group("value")
            if _QUESTION_VALUE.match(value) or not _value_is_digits_enough(kind, value):
                continue  # "密码是多少?" asks, reveals nothing
            yield SecretFinding(kind, match.start(), match.end())


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret-looking span in `text` (positions refer to the NFKC-normalised text)."""
    if not text:
        return []
    # NFKC: full-width digits and letters ("４１１１…") must not slip past the patterns.
    normalized = unicodedata.normalize("NFKC", text)
    findings = [
        *_password_findings(normalized),
        *_key_findings(normalized),
        *_number_findings(normalized),
        *_context_findings(normalized),
    ]
    return sorted(set(findings), key=lambda finding: (finding.start, finding.kind))


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def texts_of(value: object) -> Iterator[str]:
    """All strings (keys and values) inside a JSON-like value; numbers too, as text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from texts_of(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from texts_of(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


def pointed_texts(value: object, pointer: str = "") -> Iterator[tuple[str, str]]:
    """(JSON Pointer, text) for each text `texts_of` yields, so a refusal names the value that holds a secret
    (docs/long-term-memories.md, `/content/…`). A key's pointer is its object's: a pointer spelling the key
    would echo the secret."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield pointer, str(key)
            yield from pointed_texts(item, f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from pointed_texts(item, f"{pointer}/{index}")
    else:
        yield from ((pointer, text) for text in texts_of(value))
