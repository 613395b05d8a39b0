"""The built-in `preference` kind: how the user wants to be answered (language, level of detail).

Its evidence must be a standing instruction or a stated preference of the user (see statements.py for
how a quote is read), and must state every claimed field, un-negated, in a clause about answering:
"Use English with me." states language=en; "回答简短点。" states detail=brief but no language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from . import aboutness, reasons
from . import statements as st
from .base import (
    NEGATION,
    NO_STATEMENT,
    NOT_DURABLE_PREFERENCE,
    NOT_STATED,
    ONE_OFF,
    OTHER_PERSON,
    PAST,
    QUESTION,
    Refused,
)

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
            "cantonese",
            "putonghua",
            "粤语",
            "广东话",
            "汉字",
            "中国字",
            "华文",
            "简中",
            "繁中",
        ),
    ),
    "en": (("english", "英文", "英语", "英語"), ("英文", "英语", "英語", "美语", "english", "eng")),
    "ja": (
        ("japanese", "日语", "日文", "日本语", "日本語"),
        ("日语", "日文", "日本语", "日本語", "日本话", "japanese"),
    ),
    "ko": (
        ("korean", "韩语", "韓語", "韩文", "韓文", "한국어", "朝鲜语"),
        ("韩语", "韓語", "韩文", "韓文", "한국어", "한국말", "韩国语", "韓国語", "朝鲜语", "korean"),
    ),
    "fr": (
        ("french", "français", "francais", "法语", "法文", "法語"),
        ("法语", "法文", "法語", "french", "français", "francais"),
    ),
    "de": (("german", "deutsch", "德语", "德文", "德語"), ("德语", "德文", "德語", "german", "deutsch")),
    "es": (
        ("spanish", "español", "espanol", "西班牙语", "西班牙文", "西班牙語"),
        ("西班牙语", "西班牙文", "西班牙語", "spanish", "español", "espanol", "castellano"),
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


def normalize_preference(content: object) -> dict:
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
    # Keys in the order PostgreSQL's jsonb returns them (shorter first), so that every backend answers the
    # same bytes: the documented sessions are compared with the server's output (tests/test_readme.py).
    return {key: normalized[key] for key in ("text", "detail", "language") if key in normalized}


def _words(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(st.ascii_word(re.escape(w)) if w.isascii() else re.escape(w) for w in words))


_LANGUAGE_PATTERNS = {
    code: _words(tuple(sorted(words, key=len, reverse=True))) for code, (_, words) in _LANGUAGES.items()
}
_ANY_LANGUAGE = _words(tuple(sorted({w for _, words in _LANGUAGES.values() for w in words}, key=len, reverse=True)))

# Detail levels. Spans matched here are taken out before negation is read, so "不要太长" / "not too long"
# (which ask for brevity) and "不长不短" (medium) are not read as negated mentions.
_NORMAL = st._rx(
    r"不长不短",
    r"(?:不用|不要|别|不必|不需要)?太长[^，。,.]{0,3}?(?:不用|不要|别|不必|不需要)?太短",
    r"(?:不用|不要|别|不必|不需要)?太短[^，。,.]{0,3}?(?:不用|不要|别|不必|不需要)?太长",
    r"中规中矩",
    r"普通(?:的)?(?:长度|篇幅|详细程度)",
    r"(?:不用|不要|不必|别)(?:特别|太|过于)?(?:详细|长)[^，。,.]{0,3}?(?:不用|不要|不必|别)(?:太|过于|特别)?(?:简单|简短|短)",
    r"(?:不用|不要|不必|别)(?:特别|太|过于)?(?:简单|简短|短)[^，。,.]{0,3}?(?:不用|不要|不必|别)(?:太|过于|特别)?(?:详细|长)",
    r"详略得当",
    r"长短(?:合适|适中|适宜|刚好|正好)",
    st.ascii_word(r"(?:regular|ordinary|standard|usual)(?: length| amount of detail)? (?:answers?|replies|responses)"),
    st.ascii_word(r"(?:somewhere )?between (?:brief|short|concise) and (?:detailed|long|thorough)"),
    st.ascii_word(r"mid(?:dle)?[- ](?:length|sized)"),
    r"适量",
    r"适当(?:的)?(?:长度|篇幅|详细)?",
    r"不多不少",
    r"恰到好处",
    st.ascii_word(r"not too much,? (?:and )?not too little"),
    r"一般长度",
    r"长短适中",
    r"长度正常",
    r"正常(?:的)?(?:长度|篇幅)?",
    st.ascii_word(r"(?:nothing|neither|not) too (?:long|short),? (?:(?:and|or|nor|but) )?(?:not )?too (?:short|long)"),
    st.ascii_word(
        r"(?:a |an )?(?:normal|moderate|medium|reasonable|average|regular|standard|usual) (?:amount|level) of detail"
    ),
    st.ascii_word(r"(?:reasonable|regular|standard|usual|typical)[- ]length"),
    st.ascii_word(r"just right"),
    st.ascii_word(r"somewhere in (?:the )?(?:between|middle)"),
    st.ascii_word(r"middle[- ]of[- ]the[- ]road"),
    r"不要?太长[,，]?也?不要?太短",
    r"别太长[,，]?也别太短",
    r"适中",
    r"适度",
    r"正常长度",
    r"中等长度",
    r"长度中等",
    r"中等",
    st.ascii_word(r"not too long,? (?:(?:and|but|or|nor) )?not too short"),
    st.ascii_word(r"neither too long nor too short"),
    st.ascii_word(r"normal(?:[- ]length)?"),
    st.ascii_word(r"moderate(?:ly)?(?:[- ]length)?"),
    st.ascii_word(r"medium(?:[- ]length)?"),
    st.ascii_word(r"balanced"),
    st.ascii_word(r"average[- ]length"),
)
_BRIEF = st._rx(
    r"简明扼要",
    r"精练",
    r"(?:不要|不能|别)?超过(?:\d+|[一二两三四五六七八九十]+)(?:个)?(?:句|行|段)",
    r"少写点|少写一点|字数少|字少点",
    r"要短|短短|短句|短答",
    r"(?:一两|两三|三两|[一二两三1-3])(?:段|行)(?:以内|之内|就行|就好)?",
    r"(?:回答|回复)(?:要|请|尽量)?简单(?:些|点|一些|就好|就行)?$",
    r"(?:不用|不必|不需要|别|无需)(?:过多)?(?:解释|展开|细说|详细说明)",
    r"(?:挑|抓|说|讲)重点",
    r"要点",
    r"重点就行",
    r"概括",
    r"提炼",
    r"短平快",
    r"点到为止",
    r"简言之",
    r"精要",
    r"浓缩",
    r"少点字|字少一点|用最少的字|别写那么多|不要写那么多",
    r"简洁明了",
    r"简单明了",
    r"简单扼要",
    r"扼要",
    r"精简",
    r"短小",
    r"干脆",
    r"利落",
    r"开门见山",
    r"(?:别|不要|不用|少)绕弯子?",
    r"(?:直接|简单)(?:一)?点",
    r"(?:三两|两三|一两|几|[一二两三四五12345])句话?(?:说完|讲完|就行|就好|以内|之内|左右)?",
    r"(?:别|不要|少)(?:长篇大论|啰嗦|罗嗦|啰唆|废话|扯)",
    r"(?:不要|别|不用|不必)(?:太|那么|过于)?(?:长|多)",
    r"言简意赅",
    r"三言两语",
    r"长话短说",
    r"简短",
    r"简洁",
    r"简要",
    r"简明",
    r"简练",
    r"精简",
    r"精炼",
    r"简单(?:点|一点|一些|些|说|地?回答|地?回复|明了)",
    r"短(?:一)?(?:点|些)",
    r"短的",
    r"越短越好",
    r"一句话",
    r"(?:不要|别|不用|不必|无需|不需要|没必要)(?:太|那么|过于)?(?:长篇大论|说太多|说那么多|多说|啰嗦|罗嗦|废话|长)",
    r"少(?:说)?废话",
    r"少说(?:点|一点|些)?",
    r"说重点",
    r"直奔主题",
    r"直接(?:说|给)?(?:重点|结论|答案)",
    st.ascii_word(r"brief(?:ly|er)?"),
    st.ascii_word(r"brevity"),
    st.ascii_word(r"to[- ]the[- ]point"),
    st.ascii_word(r"(?:in )?(?:a|one) (?:sentence|line|paragraph) or two"),
    st.ascii_word(r"(?:no longer than|the length of) a tweet"),
    st.ascii_word(r"(?:no[- ]nonsense|condensed|in brief|in short|summary[- ]style|summari[sz]ed|summaries)"),
    st.ascii_word(r"straight(?:forward)? (?:answers?|replies|responses)"),
    st.ascii_word(
        r"(?:don't|do not|no need to|never) go (?:in|into) (?:too much |much |a lot of |great |all the )?detail"
    ),
    st.ascii_word(r"(?:no|without|skip the|skip|no need for|fewer|less) (?:details?|explanations?|elaboration)"),
    st.ascii_word(r"just the (?:answer|facts|essentials|gist|basics|key points|main points|bottom line|highlights)"),
    st.ascii_word(r"(?:only )?the (?:gist|essentials|highlights|key points|main points|bottom line|headline)"),
    st.ascii_word(r"(?:skim-?able|scannable|laconic|minimal(?:ist)?|bare[- ]bones|short[- ]form)"),
    st.ascii_word(
        r"(?:in |within )?(?:under|less than|within) (?:a|one|\d+|two|a couple of) (?:minutes?|mins?|seconds?)"
    ),
    st.ascii_word(r"quick (?:read|reads|answers?|replies|responses)"),
    st.ascii_word(r"quick(?:ly|er)?"),
    st.ascii_word(r"snappy"),
    st.ascii_word(r"crisp"),
    st.ascii_word(r"compact"),
    st.ascii_word(r"pithy"),
    st.ascii_word(r"bite[- ]size[d]?"),
    st.ascii_word(r"(?:to|in|within) (?:a|one|a single) (?:short )?(?:paragraph|sentence|line)"),
    st.ascii_word(r"bullet(?:[- ]point)?s?"),
    st.ascii_word(r"one[- ]liners?"),
    st.ascii_word(r"in a nutshell"),
    st.ascii_word(r"cut to the chase"),
    st.ascii_word(
        r"(?:skip|cut|no|without|less|minus|drop|lose) (?:the )?"
        r"(?:fluff|filler|rambling|waffle|padding|small talk|preamble)"
    ),
    st.ascii_word(
        r"(?:don't|do not|stop|no|never|without|less|avoid|not) (?:over[- ]?explain(?:ing)?|rambl(?:e|ing)|"
        r"waffl(?:e|ing)|essays?|walls? of text|writing essays|long[- ]winded|padding)"
    ),
    st.ascii_word(
        r"(?:two|three|four|a few|a couple(?: of)?|couple|1|2|3|4|one or two|two or three|2-3|1-2|few) "
        r"(?:short )?(?:sentences|lines|bullets?|paragraphs?)(?: max(?:imum)?| at most| tops)?"
    ),
    st.ascii_word(r"(?:one|a single|1) (?:short )?(?:sentence|line|paragraph)"),
    st.ascii_word(
        r"keep (?:it|things|them|the answers|answers|replies|the replies|responses|your answers|your replies) "
        r"(?:short|simple|tight|lean|tiny|small|brief|concise|crisp)"
    ),
    st.ascii_word(
        r"(?:no more than|at most|under|max(?:imum)?|within|not more than|not over|one|a single) "
        r"(?:a |one |two |three |\d+ )?(?:short )?(?:paragraphs?|sentences?|lines?)"
    ),
    st.ascii_word(r"short and simple"),
    st.ascii_word(r"short sentences"),
    st.ascii_word(r"concise(?:ly)?"),
    st.ascii_word(r"short and sweet"),
    st.ascii_word(r"short(?:er|est)?"),
    st.ascii_word(r"succinct(?:ly)?"),
    st.ascii_word(r"terse(?:ly)?"),
    st.ascii_word(r"(?:get |straight |right )?to the point"),
    st.ascii_word(r"(?:not|don't be|never) (?:too |so |overly )?(?:long|wordy|verbose|lengthy)"),
    st.ascii_word(r"no (?:need for )?(?:long|lengthy|wordy|verbose)(?: answers?| explanations?| replies)?"),
    st.ascii_word(r"(?:fewer|less) words"),
    st.ascii_word(r"less verbose"),
    st.ascii_word(r"no fluff"),
    st.ascii_word(r"tl;?dr"),
    st.ascii_word(r"(?:in )?one sentence"),
    st.ascii_word(r"the shorter the better"),
    st.ascii_word(r"(?:in )?(?:two|three|a few|1|2|3) (?:sentences|lines)"),
    st.ascii_word(
        r"(?:under|less than|fewer than|no more than|at most|within|max(?:imum)?(?: of)?) \d+ "
        r"(?:words|sentences|lines|characters)"
    ),
    r"(?:不超过|少于)?(?:\d+|[一二两三四五六七八九十百千]+)(?:个)?字(?:以内|之内|以下)",
    r"不超过(?:\d+|[一二两三四五六七八九十百千]+)(?:个)?字",
    r"(?:\d+|[一二两三四五六七八九十]+)(?:个)?句话?(?:以内|之内)",
)
# Mentions of length that ask for *more*: affirmed → detailed, negated ("no long answers") → brief.
_LONG = st._rx(
    st.ascii_word(r"long(?:er)?"),
    st.ascii_word(r"lengthier"),
    st.ascii_word(r"lengthy"),
    st.ascii_word(r"verbose"),
    st.ascii_word(r"wordy"),
    r"长一?(?:点|些)",
    r"长篇",
    r"长的",
)
_DETAILED = st._rx(
    st.ascii_word(
        r"(?:don't|do not|never) (?:hold back on|skimp on|spare(?: me)?|be afraid (?:of|to go into)|shy away from|"
        r"leave out|skip|cut) (?:the |any )?(?:details?|depth|explanations?)"
    ),
    st.ascii_word(r"can't get enough of (?:the )?(?:details?|depth|detailed|long|thorough)(?: \w+)?"),
    r"详细",
    r"(?:讲|说|解释)?(?:得)?透彻",
    r"讲透",
    r"说透",
    r"细致",
    r"仔细",
    r"完整",
    r"周全",
    r"深(?:一)?(?:点|些)",
    r"(?:每|一)一?步",
    r"一步一步",
    r"多(?:解释|讲|说|写|展开)(?:解释|讲讲|说说)?",
    r"(?:解释|讲|说|写)(?:得)?(?:清楚|明白|透)",
    r"(?:别|不要)怕长",
    r"原理",
    r"详实",
    r"翔实",
    r"系统(?:地|性)",
    r"彻底",
    r"充分",
    r"越多越好",
    r"一步步",
    r"手把手",
    r"从头到尾",
    r"来龙去脉",
    r"面面俱到",
    r"事无巨细",
    r"一五一十",
    r"不厌其烦",
    r"详解",
    r"深度(?:解析|分析)?",
    r"剖析",
    r"深挖",
    r"(?:多|带|举)(?:一些|点|几个)?例子",
    r"深入浅出",
    r"详尽",
    r"具体(?:一点|些|点)?",
    r"展开(?:讲|说)?",
    r"深入",
    r"全面",
    r"细节",
    r"多讲(?:点|一点|些)?",
    r"多说(?:点|一点|些)?",
    st.ascii_word(r"(?:more |full |fuller |great |greater |lots of |all the |plenty of |a lot of )?details?"),
    st.ascii_word(r"(?:in |into |with |of )?(?:great |more |real |full |lots of |a lot of )?depth"),
    st.ascii_word(r"go(?:ing)? (?:deep|deeper|in[- ]depth)"),
    st.ascii_word(r"deep[- ]dives?"),
    st.ascii_word(r"(?:the )?full picture"),
    st.ascii_word(r"(?:the )?(?:long|full|complete|extended) versions?"),
    st.ascii_word(r"walk me through"),
    st.ascii_word(r"deep(?:er)? (?:explanations?|answers?|dives?|responses?)"),
    st.ascii_word(r"thoroughness|rigorous(?:ly)?"),
    st.ascii_word(r"(?:all|each|every) (?:the |of the )?steps?"),
    st.ascii_word(r"more (?:info|information|explanation|context)"),
    st.ascii_word(r"(?:richer|extended|expanded) (?:answers?|explanations?|responses?|replies)"),
    st.ascii_word(r"as long as (?:it takes|needed|necessary|you need)"),
    st.ascii_word(r"cover(?:ing)? everything"),
    st.ascii_word(r"show (?:your|the|all the) (?:work|steps|reasoning)"),
    st.ascii_word(r"explain (?:the )?(?:reasoning|why|background)"),
    st.ascii_word(r"(?:with|include|give me|lots of|plenty of|more) examples"),
    st.ascii_word(r"long[- ]?form"),
    st.ascii_word(r"expand on"),
    st.ascii_word(r"more context"),
    st.ascii_word(r"every step"),
    st.ascii_word(r"(?:well|fully|thoroughly|properly)[- ]explained"),
    st.ascii_word(r"extensive(?:ly)?"),
    st.ascii_word(r"at length"),
    st.ascii_word(r"in full"),
    st.ascii_word(r"spell (?:it|things|everything) out"),
    st.ascii_word(r"break (?:it|things|everything) down"),
    st.ascii_word(r"leave nothing out"),
    st.ascii_word(r"(?:complete|full|rich|nuanced|expansive) (?:answers?|explanations?|responses?|replies)"),
    st.ascii_word(r"detailed"),
    st.ascii_word(r"in detail"),
    st.ascii_word(r"thorough(?:ly)?"),
    st.ascii_word(r"in[- ]depth"),
    st.ascii_word(r"comprehensive(?:ly)?"),
    st.ascii_word(r"elaborate(?:ly)?"),
    st.ascii_word(r"step[- ]by[- ]step"),
    st.ascii_word(r"exhaustive(?:ly)?"),
    st.ascii_word(r"(?:explain|cover|answer|describe)(?: \w+)? (?:fully|in full)"),
    st.ascii_word(r"(?:go|going) all out"),
    st.ascii_word(r"(?:don't|do not|never) hold back"),
)
_NAMES = "|".join(
    st.ascii_word(re.escape(w)) if w.isascii() else re.escape(w)
    for w in sorted({w for _, words in _LANGUAGES.values() for w in words}, key=len, reverse=True)
)
# "English or Chinese", "中文或者英文都行": a choice between languages states no preference for either.
_CHOICE = re.compile(rf"(?:{_NAMES})\s*(?:or|/|或者?|还是)\s*(?:in\s+)?(?:{_NAMES})|(?<![a-z])either(?![a-z])")
_TOO = re.compile(r"(?:太|那么|过于|too|so|overly)\s*$")
# "way too wordy", "太短了": a complaint about a length (not "so" — "…, so keep it short" is a conjunction)
_COMPLAINT = re.compile(r"(?:太|过于|(?<![a-z])too|(?<![a-z])overly)\s*$")


# A language the user writes in is not the language they ask to be answered in:
# "Respond in English even if I write in Chinese", "我用中文问，你用英文答".
_INPUT_BEFORE_EN = re.compile(
    r"(?<![a-z])i\s+(?:write|speak|ask|type|talk|text|message|send|use|am writing|'m writing|am typing|'m typing|"
    r"am asking|'m asking)(?:\s+(?:to you|you|messages|questions|things))?\s+(?:in\s+)?$"
)
_INPUT_BEFORE_ZH = re.compile(r"我(?:也|就|先)?(?:可以|能|能不能|可不可以|会)?(?:用|说|讲|写|打)$")
_INPUT_TO_YOU_ZH = re.compile(r"^(?:问你|向你提问|向你问|给你写|写给你|发给你|给你发)")
_INPUT_AFTER_ZH = re.compile(r"^(?:问|提问|写|说|讲|打字|的时候|时|提|发)")


def _about_input(reading: st.Reading, mention: st.Mention) -> bool:
    before = reading.text[: mention.start]
    after = reading.text[mention.end :]
    if _INPUT_TO_YOU_ZH.match(after):
        return True  # "用中文问你可以吗？": the user's own questions
    return bool(_INPUT_BEFORE_EN.search(before) or (_INPUT_BEFORE_ZH.search(before) and _INPUT_AFTER_ZH.match(after)))


def _language_mentions(reading: st.Reading, code: str) -> list[st.Mention]:
    mentions = reading.mentions(_LANGUAGE_PATTERNS[code], f"language:{code}")
    return [mention for mention in mentions if not _about_input(reading, mention)]


def _detail_mentions(reading: st.Reading) -> dict[str, list[st.Mention]]:
    """Mentions of each level, in order: medium first (it contains the words of the others)."""
    found: dict[str, list[st.Mention]] = {"normal": [], "brief": [], "detailed": []}
    taken: list[tuple[int, int]] = []
    for level, pattern in (("normal", _NORMAL), ("brief", _BRIEF), ("long", _LONG), ("detailed", _DETAILED)):
        for mention in reading.mentions(pattern, level):
            if any(start < mention.end and mention.start < end for start, end in taken):
                continue
            taken.append((mention.start, mention.end))
            complaint = not mention.negated and bool(_COMPLAINT.search(reading.text[: mention.start]))
            if level == "long" and complaint:
                # "way too wordy, cut it down": a complaint about length asks for brevity
                found["brief"].append(st.Mention(mention.clause, mention.start, mention.end, False, "long"))
                continue
            if level == "brief" and complaint:
                # "answers that are too short annoy me, so go deeper": a complaint, not the claim
                found["detailed"].append(st.Mention(mention.clause, mention.start, mention.end, False, "long"))
                continue
            if level == "long":
                found["brief" if mention.negated else "detailed"].append(
                    st.Mention(mention.clause, mention.start, mention.end, False, "long")
                )
                continue
            if level == "detailed" and mention.negated and _TOO.search(reading.text[: mention.start]):
                # "不要太详细" / "don't be too detailed" asks for brevity
                found["brief"].append(st.Mention(mention.clause, mention.start, mention.end, False, "too-detailed"))
                continue
            found[level].append(mention)
    return found


def _conflicting(details: dict[str, list[st.Mention]], claimed: str) -> bool:
    """Another level affirmed in a clause that also affirms the claimed one ("short but detailed answers").
    In separate clauses the other level is the complaint the instruction answers: "I find long answers
    exhausting, short ones please". A claimed medium level absorbs the words it is made of."""
    if claimed == "normal":
        return False
    mine = {m.clause for m in details[claimed] if not m.negated}
    others = [m for level, ms in details.items() if level not in (claimed, "normal") for m in ms if not m.negated]
    return any(m.clause in mine or m.label != "long" for m in others)


def _in_pure_clause(mentions: list[st.Mention], views: list[st.ClauseView]) -> bool:
    """Is one of the un-negated mentions in a clause about answering only?"""
    return any(views[m.clause].pure for m in mentions if not m.negated)


def _unstated(reading: st.Reading, normalized: dict) -> Refused | None:
    """A claimed value the quote does not mention at all: reported before any other reason."""
    if "language" in normalized and not _language_mentions(reading, normalized["language"]):
        code = normalized["language"]
        return Refused(
            NOT_DURABLE_PREFERENCE,
            f"the evidence does not mention language {code!r}",
            path="/content/language",
            cause=NOT_STATED,
        )
    if "detail" in normalized and not _detail_mentions(st.read(reading.text))[normalized["detail"]]:
        detail = normalized["detail"]
        return Refused(
            NOT_DURABLE_PREFERENCE,
            f"the evidence does not ask for {detail!r} answers",
            path="/content/detail",
            cause=NOT_STATED,
        )
    return None


def check_preference_evidence(evidence: str, normalized: dict) -> None:
    unstated = _unstated(st.read(evidence), normalized)
    if unstated is not None:
        raise unstated
    deferred: Refused | None = None  # an uncertain refusal waits until every certain check has run
    try:
        st.check_statement(evidence, third_person=False)
    except Refused as refused:
        if not refused.uncertain:
            raise
        deferred = refused
    reading = st.read(evidence)
    claims: dict[str, list[st.Mention]] = {}
    if "language" in normalized:
        code = normalized["language"]
        mentions = _language_mentions(reading, code)
        if not any(not m.negated for m in mentions):
            if mentions:
                raise Refused(
                    NOT_DURABLE_PREFERENCE,
                    f"the evidence asks not to use language {code!r}",
                    path="/content/language",
                    cause=NEGATION,
                )
            raise Refused(
                NOT_DURABLE_PREFERENCE,
                f"the evidence does not mention language {code!r}",
                path="/content/language",
                cause=NOT_STATED,
            )
        claims["language"] = mentions
        if _CHOICE.search(reading.text):
            raise st.refuse("the evidence offers a choice of languages, not a preference", uncertain=False)
    reading.mentions(_ANY_LANGUAGE)  # other languages named are style words too ("Chinese, not English")
    details = _detail_mentions(reading)
    stated_levels = {level for level, mentions in details.items() if any(not m.negated for m in mentions)}
    if "detail" in normalized:
        detail = normalized["detail"]
        if detail not in stated_levels:
            negated = any(m.negated for m in details[detail])
            raise Refused(
                NOT_DURABLE_PREFERENCE,
                f"the evidence {'asks not to give' if negated else 'does not ask for'} {detail!r} answers",
                path="/content/detail",
                cause=NEGATION if negated else NOT_STATED,
            )
        if _conflicting(details, detail):
            raise Refused(
                NOT_DURABLE_PREFERENCE,
                f"the evidence states conflicting detail levels: {sorted(stated_levels)}",
                path="/content/detail",
                cause=NO_STATEMENT,
            )
        claims["detail"] = details[detail]
    views = [st.view(reading, index) for index in range(len(reading.spans))]
    for mentions in claims.values():
        scopes = [st.scoped(views[m.clause].text) for m in mentions if not m.negated]
        if scopes and all(scopes):
            raise st.refuse_scoped(scopes[0] or "")  # "from now on, but translate this one": the claim is scoped
        if any(st.speaks_of_someone_else(views[m.clause].text) for m in mentions):
            raise st.refuse("the evidence speaks about someone else, not the user's own words", cause=OTHER_PERSON)
    if any(aboutness.is_task(reading, view) for view in views):
        raise st.refuse(
            "the evidence asks for specific content (a one-off request), not how to answer in general", cause=ONE_OFF
        )
    if deferred is not None:
        raise deferred
    _check_states_something(reading, views, claims)


def _check_states_something(reading: st.Reading, views: list[st.ClauseView], claims: dict) -> None:
    """Refuse for `question` / `no_statement` only on a positive finding (aboutness.py)."""
    for name, mentions in claims.items():
        affirmed = [m for m in mentions if not m.negated]
        if affirmed and all(st.is_ability_question(views[m.clause]) for m in affirmed):
            raise st.refuse("the evidence asks what the assistant can do, not how to answer", cause=QUESTION)
        if affirmed and all(aboutness.INDIFFERENT.search(views[m.clause].text) for m in affirmed):
            raise st.refuse(f"the evidence is indifferent about the {name}, it prefers nothing", cause=NO_STATEMENT)
        if affirmed and all(reasons.past_at(reading.text, reading.spans[m.clause], m.start) for m in affirmed):
            raise st.refuse(f"the {name} is a past preference, not a current one", cause=PAST)
        if affirmed and all(aboutness.negated_after(reading, m) for m in affirmed):
            raise st.refuse(f"the evidence refuses the claimed {name}", cause=NEGATION)
        if affirmed and all(aboutness.about_something_else(reading, m) for m in affirmed):
            raise st.refuse(f"the evidence mentions the {name} about something else, not the answers", uncertain=True)
    if "detail" not in claims and not aboutness.asks_anything(reading.text):
        raise st.refuse("the evidence states no preference or instruction", uncertain=True)
