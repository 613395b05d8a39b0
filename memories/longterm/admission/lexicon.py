"""Claims read through real writing: typos of the words the rules read are folded to the word itself.

English: a token that is not a known word and lies within a small edit distance (optimal string
alignment: an insertion, a deletion, a substitution or two swapped neighbours) of a word of the lexicon
is read as that word — "englsh" → "english", "alwasy" → "always", "breif" → "brief", "shrot" →
"short", "Detialed" → "detailed". The distance allowed grows with the word (0 below 5 letters but a
swap, 1 up to 7, 2 from 8), and real words that sit next to a lexicon word ("grief", "trench",
"through", "replay", "retail") are never changed.

Chinese: a two-character claim word typed through a pinyin input method with one wrong homophone
("中闻" → "中文", "英闻" → "英文", "祥细" → "详细", "简段" → "简短") is read as the word: one character
exact, the other among the usual homophones of the right one.

Measured on tests/data/admission_cases.jsonl's dev split (typo cases) and on the blind set's counts
(bench/admission.py); see docs/long-term-memories.md.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Words the rules read whose typos are worth folding (lower case).
LEXICON = frozenset(
    [
        "english",
        "chinese",
        "mandarin",
        "japanese",
        "korean",
        "french",
        "german",
        "spanish",
        "russian",
        "italian",
        "portuguese",
        "cantonese",
        "brief",
        "briefly",
        "briefer",
        "concise",
        "concisely",
        "short",
        "shorter",
        "shortest",
        "succinct",
        "succinctly",
        "detailed",
        "detail",
        "details",
        "thorough",
        "thoroughly",
        "elaborate",
        "comprehensive",
        "exhaustive",
        "explanation",
        "explanations",
        "explain",
        "answer",
        "answers",
        "reply",
        "replies",
        "respond",
        "response",
        "responses",
        "always",
        "please",
        "sentences",
        "sentence",
        "paragraph",
        "paragraphs",
        "length",
        "lengthy",
        "verbose",
        "simple",
        "simply",
        "quick",
        "quickly",
        "depth",
        "in-depth",
        "extensive",
        "extensively",
        "moderate",
        "medium",
        "normal",
        "language",
    ]
)
# Real words next to a lexicon word: never "corrected".
_REAL = frozenset(
    [
        "grief",
        "brie",
        "brier",
        "bride",
        "trench",
        "frenchy",
        "through",
        "thought",
        "throughout",
        "tough",
        "replay",
        "replays",
        "retail",
        "retailed",
        "retails",
        "shirt",
        "shirts",
        "sport",
        "sports",
        "snort",
        "shore",
        "shoot",
        "shorts",
        "shorted",
        "sorted",
        "sentenced",
        "pleased",
        "pleaser",
        "plead",
        "pleas",
        "lease",
        "briefs",
        "germane",
        "merman",
        "germen",
        "korea",
        "koreas",
        "germans",
        "spaniard",
        "russia",
        "italy",
        "portugal",
        "china",
        "japan",
        "france",
        "germany",
        "spain",
        "chines",
        "answered",
        "answerer",
        "replied",
        "replier",
        "responded",
        "responder",
        "explained",
        "explains",
        "respond",
        "responds",
        "depths",
        "simpler",
        "simplest",
        "simplex",
        "quickie",
        "quicker",
        "quickest",
        "normals",
        "mediums",
        "medial",
        "median",
        "detain",
        "detains",
        "details",
        "detailer",
        "elaborated",
        "elaborates",
        "moderated",
        "moderates",
        "moderator",
        "lengths",
        "lengthen",
        "concede",
        "conciser",
        "shorten",
        "shortens",
        "shortly",
        "thorium",
        "throat",
        "quick",
        "quack",
        "quirk",
        "quit",
        "quite",
        "quiet",
        "quote",
        "always",
        "alway",
        "allays",
        "away",
        "anyway",
        "sentence",
        "sentences",
        "english",
        "chinese",
        "exhausting",
        "exhausted",
        "exhaustion",
        "exhaust",
        "comprehension",
        "comprehend",
        "exploration",
        "explorations",
        "expansion",
        "extension",
        "extensions",
        "expensive",
        "intensive",
        "extended",
        "expanded",
        "detained",
        "retained",
        "obtained",
        "contained",
        "sustained",
        "deteriorate",
        "collaborate",
        "elaborately",
        "responsive",
        "responsible",
        "respondent",
        "thoroughfare",
    ]
)

# Pinyin homophones a typist picks by mistake, for the characters of the claim words.
_HOMOPHONES = {
    "文": "闻问纹雯蚊吻稳",
    "中": "钟忠终种众重肿",
    "英": "鹰樱婴",
    "语": "与雨于鱼宇羽玉",
    "详": "祥翔想象享响项",
    "细": "系戏习洗喜西",
    "简": "检减剪",
    "短": "段断锻端",
    "洁": "结节接街杰",
}
_ZH_WORDS = ("中文", "英文", "英语", "汉语", "详细", "简短", "简洁")
_WORD = re.compile(r"[a-z]+")


def osa_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance (Levenshtein plus adjacent swaps), capped at limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def _allowed(word: str) -> int:
    return 2 if len(word) >= 9 else 1 if len(word) >= 5 else 0


def _is_swap(a: str, b: str) -> bool:
    if len(a) != len(b):
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


@lru_cache(maxsize=4096)
def correct_word(token: str) -> str:
    """The lexicon word a typo stands for, or the token itself."""
    if len(token) < 4 or token in LEXICON or token in _REAL:
        return token
    best, best_distance = token, 99
    for word in LEXICON:
        if word[0] != token[0] and not _is_swap(token, word):
            continue  # typos rarely hit the first letter; this keeps "retail" from "detail"
        allowed = _allowed(word)
        distance = osa_distance(token, word, max(allowed, 1))
        misordered = len(word) >= 7 and sorted(word) == sorted(token) and distance <= 2  # "consice"
        close = distance <= allowed or (distance == 1 and _is_swap(token, word)) or misordered
        if close and distance < best_distance:
            best, best_distance = word, distance
    return best


def _correct_zh(text: str) -> str:
    for word in _ZH_WORDS:
        first, second = word[0], word[1]
        for wrong in _HOMOPHONES.get(second, ""):
            text = text.replace(first + wrong, word)
        for wrong in _HOMOPHONES.get(first, ""):
            text = text.replace(wrong + second, word)
    return text


def correct(text: str) -> str:
    """`text` (already lower case) with the typos of lexicon words folded to the words themselves."""
    text = _WORD.sub(lambda match: correct_word(match.group()), text)
    return _correct_zh(text)
