"""What a quote says, judged by its meaning rather than by cue words (pure Python, deterministic).

The rules read the user's quote (the evidence) clause by clause:

* **who speaks and how sure** — a guess ("maybe", "可能"), a hedge ("I think …") or words about someone
  else ("the user likes …", "用户喜欢…", "she prefers …") is not the user stating a preference;
* **when it applies** — a request scoped to the current message ("this time", "this question",
  "translate …", "这次", "这段", "一下") is a one-off, not a standing instruction; "from now on" /
  "以后" / "从今天起" make it standing again;
* **what it asks for** — a clause is *pure* when, once the style words it mentions (a language, a level
  of detail) are taken out, only words about answering remain: verbs of answering ("reply", "用",
  "说"), politeness ("please", "请"), time ("always", "以后"), preference frames ("I prefer", "我喜欢")
  and function words. A clause that still names something else ("a short poem", "量子力学",
  "my kids", "food") is about that thing, not about how to answer;
* **whether it directs** — the quote must contain a directive: an imperative, a polite request, a
  stated preference of the speaker, or a style noun phrase ("Short answers, please", "中文就行");
* **negation** — a mention under "don't", "no", "never", "stop", "不要", "别", … within its clause is
  refused, never turned into its opposite (except "not too long" / "不要太长", which ask for brevity).

Each check raises `Refused` with `not_durable_preference`; `uncertain=True` marks the refusals a model
judge may overturn (a hedge, an ability question, a style word in a clause that is not pure).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import lexicon, reasons
from .base import (
    HEDGE,
    HYPOTHETICAL,
    NO_STATEMENT,
    NOT_DURABLE_PREFERENCE,
    ONE_OFF,
    OTHER_PERSON,
    PAST,
    QUESTION,
    TEMPORARY,
    Refused,
)

_I = re.IGNORECASE


def _words(text: str) -> list[str]:
    """The whitespace-separated words of a block of text (vocabularies below)."""
    return text.split()


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), _I)


def ascii_word(word: str) -> str:
    """A regex for an ASCII word that is not part of a longer ASCII word (CJK neighbours are fine)."""
    return rf"(?<![a-z]){word}(?![a-z])"


# Traditional characters of the words the rules read, folded to simplified ones (one for one).
_TRADITIONAL = str.maketrans(
    "請簡潔體後覆語說講詳細長點們對別這個話談問題總當時囉盡覺歡為麼嗎謝種從現開應該許會讓寫釋較習慣愛願須國華漢韓單絕囉",
    "请简洁体后复语说讲详细长点们对别这个话谈问题总当时啰尽觉欢为么吗谢种从现开应该许会让写释较习惯爱愿须国华汉韩单绝啰",
)


def normalize_text(text: str) -> str:
    """NFKC (full-width forms), traditional characters folded, typographic quotes folded, lower case, and
    typos of the words the rules read folded to those words (lexicon.py)."""
    text = unicodedata.normalize("NFKC", text).translate(_TRADITIONAL)
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return lexicon.correct(text.lower())


# ---------------------------------------------------------------------------------------------
# Whole-quote refusals: chit-chat, guesses, someone else's preference, one-off requests
# ---------------------------------------------------------------------------------------------

CHITCHAT = re.compile(
    r"^(?:你好|您好|嗨|哈喽|哈啰|早上好|早安|午安|晚上好|晚安|谢谢|多谢|哈+|呵呵|嗯+|好的|好|ok|okay|hi|hello|hey|"
    r"thanks|thank you(?: so much| very much)?|lol|haha+|good (?:morning|night|evening|afternoon)|cool|great|nice)"
    r"[\s!！.。~～,，?？]*(?:(?:哈+|好的|谢谢|thanks|lol)[\s!！.。~～,，?？]*)*$",
    _I,
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
    r"不一定",
    ascii_word(r"maybe"),
    ascii_word(r"probably"),
    ascii_word(r"perhaps"),
    ascii_word(r"possibly"),
    ascii_word(r"might"),
    ascii_word(r"i guess"),
    ascii_word(r"i suppose"),
    ascii_word(r"not sure"),
    ascii_word(r"seems?"),
    ascii_word(r"apparently"),
)
# A hedge: the speaker is not sure of their own preference; a judge may still read it as one.
_HEDGE = _rx(ascii_word(r"i (?:think|believe|feel like)"), r"我(?:觉得|认为|感觉)(?:我|自己)?(?:应该)?")
# "as brief as possible" / "尽可能" are instructions, not guesses.
_NOT_GUESS = _rx(
    r"尽可能",
    r"可能的话",
    r"如果可能",
    r"[说讲]个大概",
    r"大概(?:说|讲|介绍)(?:一下|下)?",
    r"(?:别|不要|不用)让我猜",
    ascii_word(r"as possible"),
    ascii_word(r"if possible"),
    ascii_word(r"(?:when|where|wherever|whenever) possible"),
    ascii_word(r"might as well"),
    ascii_word(r"(?:don't|do not) make me guess"),
)
_THIRD_PARTY = (
    r"(?:kids?|children|son|daughter|wife|husband|partner|mom|mother|dad|father|parents?|friends?|boss|team|"
    r"colleagues?|students?|clients?|users?|family)"
)
_THIRD_PERSON = _rx(
    ascii_word(r"(?:the |this |our |that )?users?(?:'s)?"),
    ascii_word(rf"(?:he|she|they|his|her|their|my {_THIRD_PARTY})")
    + r"\s+(?:[a-z']+\s+){0,2}?(?:prefers?|likes?|loves?|wants?|needs?|seems?|probably|usually|would|is|are|reads?)"
    + r"(?![a-z])",
    r"(?<!其)(?:用户|他们|她们|他|她|人家|孩子们?|我(?:的)?(?:妈妈?|爸爸?|老婆|老公|孩子|朋友|同事|老板|女儿|儿子|家人))"
    r".{0,4}?(?:喜欢|想要|希望|偏好|偏爱|似乎|好像|应该|大概|可能|习惯|需要|要|爱)",
)
_ONE_OFF = _rx(
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
    r"这个",
    r"这篇",
    r"这封",
    r"这份",
    r"这道",
    r"这里",
    r"上面",
    r"刚才",
    r"一下",
    r"翻译",
    r"翻成",
    r"译成",
    r"怎么说",
    r"什么意思",
    r"先用",
    ascii_word(r"just this once"),
    ascii_word(r"this once"),
    ascii_word(r"(?:this|that|the next) time"),
    ascii_word(r"for now"),
    ascii_word(r"right now"),
    ascii_word(r"today"),
    ascii_word(r"tonight"),
    ascii_word(r"this"),
    ascii_word(r"these"),
    ascii_word(r"(?:for|in) (?:your|the) next (?:answer|reply|response|message)"),
    ascii_word(
        r"(?:the|my|your) next (?:question|one|message|answer|reply|email|paragraph|sentence|part|response|prompt)"
    ),
    ascii_word(
        r"(?:this|that|the following|my last|the last|the previous) (?:question|one|message|email|text|paragraph)"
    ),
    r"下一个|下个问题|下一题|接下来这个|接下来的问题|这本|这部|这首|这张|这条|这些",
    ascii_word(
        r"for (?:my|this|the|his|her|our) (?:homework|essay|assignment|report|presentation|project|exam|test|"
        r"interview|email|letter|post|thesis|paper|speech|meeting|trip|class)"
    ),
    ascii_word(r"(?:respond|reply|answer) to (?!me\b|us\b|my messages|my questions|everything|all|anything)[a-z]+'s"),
    ascii_word(r"translat(?:e|es|ed|ing|ion)"),
    # "Answer the question above in English": a quote pointing at one piece of text
    ascii_word(
        r"(?:questions?|messages?|text|emails?|code|paragraphs?|passages?|articles?|sentences?|parts?|sections?|"
        r"lists?|tables?|documents?|files?|links?|quotes?|ones?|posts?|comments?) (?:above|below)"
    ),
    ascii_word(r"the above"),
    # one piece of text or one answer named by its place: "my previous question", "point two", "question 3"
    ascii_word(
        r"(?:this|that|my|your|the) (?:previous|last|earlier|first|second|third|next|other|following) "
        r"(?:question|one|message|email|text|paragraph|reply|answer|response|point|part|section|item|step|problem)"
    ),
    ascii_word(
        r"(?:question|point|step|item|part|section|problem|exercise|number|no\.?|q) "
        r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)(?![a-z])"
    ),
    ascii_word(r"the (?:question|one|part|bit|section) (?:about|on|regarding)"),
    ascii_word(r"(?:version|translation|summary|explanation|rewrite) of (?:that|this|it)"),
    ascii_word(r"(?:just|only) (?:once|here)"),
    r"^\s*once(?![a-z])(?! upon)",
    ascii_word(
        r"for (?:my|this|the|his|her|our) (?:cover letter|resume|cv|letter|article|blog post|blog|slides|document|"
        r"proposal|application|form|message|caption|tweet|review|story|poem|speech|toast|card)"
    ),
    r"下一条|下条|这一条|本题|这一题|这题|这一个|就这一|仅限|只限|只有这(?:个|一个|次|道|题)",
    # "麻烦把答案改成英文": an edit of one text
    r"把(?:这|那|它|你的?|刚才|上面|答案|回答|上一|我的)",
    # A redo of one answer: "Say it again in English", "Repeat your last answer in Chinese", "再用中文说一遍"
    ascii_word(
        r"(?:say|answer|redo|repeat|rewrite|rephrase|explain|put|do) (?:it|that|this)"
        r"(?! way| style| format| for me from| like)(?: again| once more| over)?"
    ),
    ascii_word(r"(?:repeat|redo|rewrite|rephrase) (?:your|the|my) (?:last|previous)"),
    ascii_word(r"(?:what|everything) you just (?:said|wrote|told)"),
    ascii_word(r"(?:say|explain|answer|tell me) (?:it|that)? ?(?:again|once more)"),
    r"(?:再|重新)(?:用|以)?[^，。,]{0,8}?(?:说|讲|答|回答|解释|写|翻译)?(?:一遍|一次|一下)|重新(?:回答|说|讲|写)|再说一?遍|再讲一?遍",
    ascii_word(r"how (?:do|would|can) (?:you|i|we) say"),
    ascii_word(r"what(?:'s| is| does| do)"),
    ascii_word(r"mean(?:s)? in"),
)
_DURABLE_START = _rx(
    r"从今天(?:起|开始)",
    r"今天起",
    r"从现在(?:起|开始)",
    ascii_word(r"from today(?: on(?:wards)?)?"),
    ascii_word(r"(?:starting|beginning) today"),
    ascii_word(r"from now on"),
)


def speaks_of_someone_else(clause: str) -> bool:
    return bool(_THIRD_PERSON.search(clause) or reasons.speaks_of_someone_else(clause))


def refuse(reason: str, *, uncertain: bool = False, cause: str = NO_STATEMENT) -> Refused:
    return Refused(NOT_DURABLE_PREFERENCE, reason, path="/evidence", uncertain=uncertain, cause=cause)


def scoped(text: str) -> str | None:
    """The cause when `text` (normalised) names a period or a one-off scope, else None."""
    if reasons.is_temporary(text):
        return TEMPORARY
    if _ONE_OFF.search(_DURABLE_START.sub(" ", text)) or reasons.asks_about_content(text):
        return ONE_OFF
    return None


def check_statement(evidence: str, *, third_person: bool = True) -> None:
    """The whole-quote refusal reasons (reasons.py and the lexicons above): Refused with its cause, else None.

    `third_person=False` (the preference kind) leaves to the caller what it judges per mention: words about
    someone else ("Reply in English so my colleague can read it" is the user's instruction), the past
    ("I used Chinese last time, but please answer in English"), and scope words in a quote that also says
    it stands ("This matters to me: always answer in English").
    A quote with a standing marker ("from now on", "always", "以后") has its scope words judged per clause.
    """
    text = normalize_text(evidence).strip()
    if CHITCHAT.match(text):
        raise refuse("chit-chat is not a durable preference", cause=NO_STATEMENT)
    if reasons.states_nothing(text):
        raise refuse("the evidence is a remark, a greeting or a joke; it asks for nothing", cause=NO_STATEMENT)
    if reasons.is_hypothetical(text):
        raise refuse("the evidence is hypothetical ('if I were …'), not the user's preference", cause=HYPOTHETICAL)
    if third_person and reasons.is_past(text):
        raise refuse("the evidence is a past preference ('I used to …'), not a current one", cause=PAST)
    if reasons.is_question(text):
        raise refuse("the evidence asks a question, it states no preference", cause=QUESTION)
    unhedged = _NOT_GUESS.sub(" ", text)
    if _GUESS.search(unhedged) or reasons.HEDGE_MORE.search(unhedged):
        raise refuse("the evidence is a guess, not a stated preference", cause=HEDGE)
    if third_person and (_THIRD_PERSON.search(text) or reasons.speaks_of_someone_else(text)):
        raise refuse("the evidence speaks about someone else, not the user's own words", cause=OTHER_PERSON)
    if _HEDGE.search(text):
        raise refuse("the evidence is hedged ('I think …'), not a stated preference", uncertain=True, cause=HEDGE)
    if reasons.has_durable_marker(text):
        return
    scope = scoped(text)
    if scope is not None:
        raise refuse_scoped(scope)


def refuse_scoped(scope: str) -> Refused:
    if scope == TEMPORARY:
        return refuse("the evidence is limited to a period (today, this session), not durable", cause=TEMPORARY)
    return refuse("the evidence is a one-off request, not a durable preference", cause=ONE_OFF)


# ---------------------------------------------------------------------------------------------
# Clauses, negation and mentions
# ---------------------------------------------------------------------------------------------

_CLAUSE = re.compile(r"[^,，、。.!！?？;；:：\n—–…]+[,，、。.!！?？;；:：\n—–…]*")
_EN_NEGATOR = _rx(
    ascii_word(
        r"(?:don't|dont|do not|does not|doesn't|not|never|no|nor|stop|avoid|without|isn't|aren't|won't|"
        r"can't|cannot|hate|dislike|against|neither|less|instead of|rather than|other than|except|over(?=\s*$)|quit|"
        r"enough with|can't stand|not a fan of|anything but|everything but|tired of|sick of|fed up with|no more|"
        r"get rid of|ditch|drop|than|refrain from|skip|omit|leave out|cut out|done with|no longer)"
    )
)
_ZH_NEGATOR = re.compile(
    r"(?<![要能可是行好])不(?!管|论|过|错|同|仅|但|如)|(?<![特区分级类告离个识差性辨派鉴])别(?!的|人)|没(?!错)|勿|莫|"
    r"无需|无须|甭|讨厌|拒绝|停止|受够了?|(?<![至多])少用|(?<![至多])少说|禁止|杜绝|停用|免去"
)
_RESET = _rx(
    ascii_word(r"(?:(?<!anything )(?<!everything )but|instead(?! of)|rather(?! than)|only)"),
    ascii_word(
        r"and (?:keep|be|give|use|answer|reply|make|just|write|stick|go|stay|please|instead|switch|respond|talk|"
        r"speak|start|begin|explain|tell|stay|move|change)"
    ),
    ascii_word(r"(?:more|always)"),
    r"(?<![a-z])so (?=(?:please|pls|just|use|answer|reply|respond|i|you|keep|give|stick|go|write|talk|speak|in|"
    r"only)(?![a-z]))",
    # "I can't read Chinese so English only"; not the intensifier of "stop being so verbose"
    r"(?<![a-z])(?<!being )(?<!be )(?<!is )(?<!are )(?<!was )(?<!were )(?<!too )(?<!that )so\s*$",
    r"而是|但是|但|只|就用|改用|(?<![不别])要用|改成|换成|用回|(?<![不别需想只])要(?!太)|了(?=\s*(?:请|改|就|用|还是))",
)


_CONTRAST = re.compile(
    r"(?<![a-z])(?<!anything )(?<!everything )(?<!nothing )(?<!all )"
    r"(?=(?:but|however|though|so that|because|since|cause|as i)\s)"
    r"|(?<![a-z])(?=so (?:i|you|we|my|that|please|feel|it)(?![a-z]))|(?=但是|可是|不过|因为|所以|因此)"
)


def clauses(text: str) -> list[tuple[int, int]]:
    """(start, end) of each clause of `text`, split at punctuation and before "but" / "但是"."""
    spans = []
    for match in _CLAUSE.finditer(text):
        start = match.start()
        for cut in _CONTRAST.finditer(text, match.start() + 1, match.end()):
            if cut.start() > start:
                spans.append((start, cut.start()))
                start = cut.start()
        spans.append((start, match.end()))
    return spans


# Negative words that do not negate what follows: "don't mind long answers", "no matter what", "别忘了用中文".
_NOT_NEGATING = _rx(
    ascii_word(
        r"(?:don't|do not|wouldn't|would not|never) (?:mind|forget|hesitate(?: to)?)|no matter(?: what)?|"
        r"without fail|no doubt|not only|no problem|can't wait|never ever forget|never mind|nevermind"
    ),
    r"(?:别|不要|不)忘(?:了|记)?|不介意|不妨|不嫌|不怕|没问题|不在话下",
)


def _negated_before(prefix: str) -> bool:
    """Does `prefix` (a clause up to a mention) negate what follows, without a 'but'/'而是' in between?"""
    prefix = _NOT_NEGATING.sub(lambda match: " " * len(match.group()), prefix)
    last_negator = -1
    for pattern in (_EN_NEGATOR, _ZH_NEGATOR):
        for match in pattern.finditer(prefix):
            last_negator = max(last_negator, match.end())
    if last_negator < 0:
        return False
    return not _RESET.search(prefix, last_negator)  # on the whole prefix: its look-behinds see the negator


@dataclass
class Mention:
    clause: int
    start: int
    end: int
    negated: bool
    label: str = ""


@dataclass
class Reading:
    """The quote, normalised and split, with every masked span (mentions and their frames)."""

    text: str
    spans: list[tuple[int, int]]
    masked: list[tuple[int, int]] = field(default_factory=list)

    def clause_of(self, position: int) -> int:
        for index, (start, end) in enumerate(self.spans):
            if start <= position < end:
                return index
        return len(self.spans) - 1

    def clause_text(self, index: int) -> str:
        start, end = self.spans[index]
        return self.text[start:end]

    def mentions(self, pattern: re.Pattern[str], label: str = "") -> list[Mention]:
        """Every occurrence of `pattern`, with whether its clause negates it (negation carries into a
        clause that begins with the mention itself: "stop giving me long, detailed answers")."""
        found = []
        for match in pattern.finditer(self.text):
            index = self.clause_of(match.start())
            start = self.spans[index][0]
            prefix = self.text[start : match.start()]
            negated = _negated_before(prefix)
            rest = self.text[match.end() : self.spans[index][1]]
            continues = not re.sub(r"\s|and|or|&|和|或|也", "", prefix) and _ANSWER_NOUN.search(rest)
            if not negated and index > 0 and continues:
                previous = self.clause_text(index - 1)
                negated = _negated_before(previous)
            found.append(Mention(index, match.start(), match.end(), negated, label))
            self.masked.append((match.start(), match.end()))
        return found


def read(evidence: str) -> Reading:
    text = normalize_text(evidence)
    return Reading(text, clauses(text) or [(0, len(text))])


# ---------------------------------------------------------------------------------------------
# Pure clauses and directives
# ---------------------------------------------------------------------------------------------

# Words that may surround a style mention in a clause about *how to answer*.
_EN_VOCAB = frozenset(
    _words(
        """
        please pls plz kindly just only also too more much very really so and or then the a an to in into with
        for of on at as when whenever while it its them that me my mine you your yours i i'd i'm im id i'll we
        us our let's lets let all every everything things stuff always default defaults by from now forward
        forwards going future onward onwards remember make sure can could would will shall should must mind if
        is are be being been fine good great ok okay best better works work suits suit thanks thank do try
        possible keep keeping stick switch stay use using used answer answers answered answering reply replies
        replied replying respond responds responded responding response responses write writing written talk
        talking speak speaking spoken communicate communicating communication chat chatting converse explain
        explaining explanation explanations explained give giving get go point prefer prefers preferred
        preference preferences like likes love loves want wants need needs rather comfortable easier happier
        message messages language languages length style sentences words form version versions topics topic
        questions question subjects subject concepts technical general generally usually mostly here any
        anything elaborate detail details simple direct clear plain clearly plainly tone format way mode text
        texts output outputs content everything's reading read conversation conversations matters issues
        problems things' yourself myself them's simplified traditional don't dont not no never avoid stop
        overly less
            u ur bit little hey appreciate kept even
            have
            instead than over ones
            still anyway regardless however though
            but
            feel free because since cause
        """
    )
)
_ANSWER_NOUN = _rx(
    ascii_word(r"(?:answers?|repl(?:y|ies)|responses?|explanations?|messages?|texts?)"), r"回答|回复|答案|解释"
)
_EN_PREFERENCE = _rx(
    ascii_word(
        r"(?:prefer|prefers|preferred|preference|like|likes|love|loves|want|wants|need|needs|rather|comfortable|"
        r"easier|happier|best|fine|works|great|appreciate|grateful)"
    )
)
_FIRST_PERSON_START = re.compile(r"^\s*(?:i|i'd|i'm|im|i'll|i've|my|we|our)(?![a-z])")
_ZH_VOCAB = re.compile(
    "|".join(
        sorted(
            _words(
                """
                从现在起 从现在开始 从今天起 从今天开始 今天起 可能的话 尽可能 就可以 比较喜欢
                更喜欢 更习惯 更愿意 请 麻烦 劳驾 以后 今后 往后 之后 从此 默认 始终 一直
                总是 永远 每次 全部 全都 统一 一律 记住 务必 尽量 就好 就行 即可 可以 能
                吧 啊 呀 哦 呢 嘛 了 的 地 得 点 一点 一些 些 点儿 儿 多 更 再 要
                需要 我 你 您 给 跟 和 与 对 同 用 使用 说 讲 回答 回复 答复 回 答
                作答 交流 沟通 聊 聊天 对话 说话 写 表达 解释 讲解 阐述 说明 回应 答案
                内容 喜欢 希望 想 想要 偏好 偏爱 习惯 倾向 比较 还是 最好 好 谢谢 保持
                长度 字数 篇幅 语言 时候 时 问题 技术 所有 任何 也 而且 并且 又 看 读
                让 在 是 风格 方式 方面 话 都 只 仅 一定 类 相关 东西 概念 语气 尽 越
                文字 句子 表述 就 都用 全用 只用 即 都是 总 还 而 但 或 或者 及 不要
                不用 不必 无需 不需要 别 不 太 那么 过于 简体 繁体 繁體
                    吗 么 呗 哈 哟 咯 喔
                    改用 换成 换用
                    也行 都行 行 对我来说 来说 所以 因为 因此 控制在 控制
                """
            ),
            key=len,
            reverse=True,
        )
    )
)
_ZH_PREFERENCE = re.compile(r"喜欢|希望|想|要|偏好|偏爱|习惯|倾向|需要|愿意|prefer|like|want|need")
_EN_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_ANSWER_WORD = _rx(
    ascii_word(
        r"(?:answers?|repl(?:y|ies)|respon(?:d|ses?)|explanations?|write|talk|speak|use|communicate|chat|keep|"
        r"versions?|explain|messages?)"
    ),
    r"回答|回复|答复|作答|交流|沟通|聊|说|讲|用|写|解释|答案|回|答",
)
_DIRECTIVE_SIGNAL = _rx(
    ascii_word(
        r"(?:please|pls|plz|kindly|always|only|default|from now on|going forward|in (?:the )?future|remember|"
        r"make sure|let's|lets|thanks|thank you|would you mind|(?:can|could|would|will) you|feel free|"
        r"the \w+er the better)"
    ),
    r"请|麻烦|劳驾|以后|今后|往后|之后|从现在|从今天|默认|始终|一直|总是|每次|统一|一律|都用|记住|务必|尽量|"
    r"就好|就行|就可以|即可|吧|(?:点|一点|一些|些)儿?$|要|越.越好|谢谢",
)
_EN_IMPERATIVE = re.compile(
    r"^\s*(?:(?:please|pls|plz|kindly|just|also|and|so|then|now|always|from now on|going forward|in future|"
    r"by default|remember to|try to|make sure to|make sure you|but)\s+)*"
    r"(?:answer|reply|respond|write|talk|speak|use|keep|be|give|make|explain|communicate|chat|stick|switch|"
    r"stay|go|get|elaborate|say|default|avoid|stop|don't|do|never|try|remember|provide|limit|cut|converse|"
    r"not|no)"
    r"(?![a-z])"
)
_ZH_IMPERATIVE = re.compile(
    r"^\s*(?:请|麻烦|以后|今后|往后|都|也|就|还是|尽量|一直|始终|默认)*"
    r"(?:用|说|讲|跟我|和我|对我|给我|与我|同我|回答|回复|答|写|解释|保持|别|不要|简|详|讲|多|少)"
)
_EN_ABILITY_QUESTION = re.compile(
    r"^\s*(?:can|could|do|does|will)\s+you\s+(?:even\s+)?(?:speak|understand|read|write|know|talk)(?![a-z])"
)
_ZH_ABILITY_QUESTION = re.compile(r"会|懂|能不能听|看得懂|听得懂")
_PUNCTUATION = " \t\n,，、。.!！?？;；:：~～"
_QUESTION_END = re.compile(r"[?？]\s*$|吗[\s。]*$|么[\s。]*$")
_POLITE_REQUEST = _rx(
    r"^\s*(?:(?:so|and|but|hey|also|ok|okay)\s+)?(?:can|could|would|will)\s+(?:you|u)\b",
    r"^\s*would you mind\b",
    r"能不能|可不可以|能否|可以|能",
)
_TASK_EN = re.compile(
    r"^\s*(?:(?:please|pls|kindly|just|also|and|so|now|then|can you|could you|would you|will you)\s+)*"
    r"(?:tell|explain|write|summari[sz]e|describe|list|give|show|translate|help|find|make|create|draw|compare|"
    r"calculate|analy[sz]e|draft|compose|introduce|define|teach|recommend|suggest|fix|check|review|read|"
    r"answer|reply|respond|send|generate|outline)(?![a-z])"
)
_TASK_ZH = re.compile(
    r"^\s*(?:请|麻烦|帮我|给我|替我|你)*(?:讲讲|讲|说说|介绍|解释|写|总结|翻译|告诉|列|分析|推荐|查|算|画|做|生成|"
    r"概括|描述|回答|比较|评价|改|检查)"
)


@dataclass(frozen=True)
class ClauseView:
    text: str
    residue: tuple[str, ...]
    first_person: bool
    has_preference: bool
    question: bool

    @property
    def pure(self) -> bool:
        return not self.residue and (not self.first_person or self.has_preference)


def _blank(text: str, spans: Iterable[tuple[int, int]], offset: int) -> str:
    chars = list(text)
    for start, end in spans:
        for position in range(max(start - offset, 0), min(end - offset, len(chars))):
            chars[position] = " "
    return "".join(chars)


def view(reading: Reading, index: int) -> ClauseView:
    """The clause with its mentions blanked out: what else it talks about (the residue)."""
    start, _ = reading.spans[index]
    raw = reading.clause_text(index)
    blanked = _blank(raw, reading.masked, start)
    words = [word for word in _EN_WORD.findall(blanked) if word not in _EN_VOCAB]
    chinese = _ZH_VOCAB.sub(" ", re.sub(r"[a-z0-9']+", " ", blanked))
    residue = tuple(words + _CJK.findall(chinese))
    first_person = bool(_FIRST_PERSON_START.match(raw) or re.match(r"^\s*(?:以后|今后)?\s*我(?!们)", raw))
    has_preference = bool(_EN_PREFERENCE.search(raw) or _ZH_PREFERENCE.search(raw))
    return ClauseView(raw, residue, first_person, has_preference, bool(_QUESTION_END.search(raw)))


def is_task(clause: ClauseView) -> bool:
    """A request for content ("tell me about Paris", "给我讲讲量子力学"): it names something besides style."""
    return bool(clause.residue) and bool(_TASK_EN.match(clause.text) or _TASK_ZH.match(clause.text))


def is_ability_question(clause: ClauseView) -> bool:
    if not clause.question:
        return False
    if _EN_ABILITY_QUESTION.match(clause.text):
        return not re.search(r"\b(?:with|to) me\b|from now on|always", clause.text)
    return bool(_ZH_ABILITY_QUESTION.search(clause.text)) and not re.search(r"以后|跟我|和我|对我", clause.text)


def is_directive(clause: ClauseView, mentions_in_clause: int) -> bool:
    """A pure clause that directs: an imperative, a request, a stated preference or a style noun phrase."""
    if not clause.pure or is_ability_question(clause):
        return False
    text = clause.text
    if clause.question and not _POLITE_REQUEST.search(text):
        return False
    if clause.first_person:
        return clause.has_preference
    if _DIRECTIVE_SIGNAL.search(text.strip(_PUNCTUATION)) or _EN_IMPERATIVE.match(text) or _ZH_IMPERATIVE.match(text):
        return True
    if _EN_PREFERENCE.search(text) or _ZH_PREFERENCE.search(text):
        return True  # "Normal length answers are fine", "English works best for me"
    # A style noun phrase: "Short answers.", "中文回答。", but not a bare "English.".
    return mentions_in_clause > 0 and bool(_ANSWER_WORD.search(text))
