"""`no_statement` and `one_off` by what a quote is about, found rather than assumed.

The rules used to admit a quote only when every word around a style mention belonged to a vocabulary of
"words about answering"; any word outside it (a typo, "tone", "essays", "拿") refused a clear
preference. Now a mention is refused as *about something else* only on a positive finding:

* it modifies a noun that is not an answer ("Chinese *food*", "English *class*", "英文*小说*",
  "英文*不好*") — unless a verb of using or answering introduces it ("answer in English quickly",
  "用中文写");
* it is the object of a fact about the user ("I *speak* English", "I'm *learning* Spanish",
  "我在*学*英文") rather than of a request;

and a quote states nothing when it has no word of answering, asking or preferring at all ("English.",
"Chinese is hard"). A request for specific content (a task) is refused as `one_off` only when nothing in
the quote makes it standing ("from now on", "always", "以后", "每次", "unless I say otherwise").
"""

from __future__ import annotations

import re

from . import reasons
from . import statements as st

_I = re.IGNORECASE


def _w(word: str) -> str:
    return rf"(?<![a-z']){word}(?![a-z])"


# ---------------------------------------------------------------------------------------------
# Standing markers: a task with one of these is a standing instruction about answers
# ---------------------------------------------------------------------------------------------

has_durable_marker = reasons.has_durable_marker


# ---------------------------------------------------------------------------------------------
# A mention about something else
# ---------------------------------------------------------------------------------------------

# What may follow a style mention in English when it is about answering.
_PREDICATE = frozenset({"is", "are", "was", "were", "sounds", "seems", "looks", "has", "isn't", "wasn't", "'s"})
_PREFERRED = re.compile(
    _w(
        r"(?:fine|good|great|best|better|ok|okay|perfect|ideal|preferred|what i (?:want|need|like|prefer)|"
        r"easier|easiest|more comfortable|my preference|the way to go|enough|welcome|appreciated|nice|"
        r"much better|way better|always|the best|all i need|what works|comfortable|natural|easiest|clearer|faster|"
        r"quicker|simpler|the language i|what i'm (?:comfortable|used)|my go-to|my choice)"
    ),
    _I,
)
_TOPIC_NOUNS = frozenset(
    [
        "conversation",
        "conversations",
        "topics",
        "topic",
        "subjects",
        "subject",
        "concepts",
        "questions",
        "question",
        "issues",
        "problems",
        "things",
        "stuff",
        "matters",
        "reading",
        "technical",
        "general",
        "content",
    ]
)
_EN_FOLLOWERS = (st._EN_VOCAB - _PREDICATE - _TOPIC_NOUNS) | frozenset(
    [
        "replies",
        "responses",
        "explanations",
        "answers",
        "versions",
        "output",
        "outputs",
        "words",
        "text",
        "summaries",
        "summary",
        "unless",
        "except",
        "whenever",
        "where",
        "wherever",
        "even",
        "though",
        "although",
        "when",
        "if",
        "while",
        "until",
        "since",
        "possible",
        "thanks",
        "thx",
        "ty",
        "cheers",
        "pls",
        "plz",
        "please",
        "rather",
        "instead",
        "mostly",
        "primarily",
        "exclusively",
        "always",
        "tone",
        "style",
        "voice",
        "register",
        "formally",
        "casually",
        "friendly",
        "politely",
        "warmly",
        "throughout",
        "overall",
        "ones",
        "onward",
    ]
)
_EN_FOLLOWERS |= frozenset(["makes", "feels", "helps", "reads", "comes", "flows", "fits", "serves", "matters"])
_EN_INTRO = re.compile(
    _w(
        r"(?:in|into|use|using|speak|speaking|talk|talking|write|writing|reply|respond|answer|switch|stick|"
        r"stay|keep|give|to|with|default|communicate|chat|converse|text|message|only|please|be|more|less|"
        r"very|really|too|so|and|or|but|just|always)"
    )
    + r"(?:\s+(?!food|class|movie|book|about|of|on|regarding)[a-z]+){0,2}\s*$",
    _I,
)
_EN_POSSESSED = re.compile(_w(r"(?:my|his|her|their|our)") + r"\s+(?:own\s+|spoken\s+|written\s+)?$", _I)
_EN_DESCRIBED = re.compile(
    _w(r"(?:is|was|are|were|looks|seemed|seems|sounds|felt|feels|being)")
    + r"\s+(?:a |an |the )?(?:very |really |so |quite |pretty |super |extremely |too |a bit |rather |fairly )?"
    r"(?:[a-z]+,? (?:and|or) )?(?:very |really |so |quite |pretty |super |extremely |too )?$",
    _I,
)
_EN_SUBJECT = re.compile(
    _w(r"(?:my|the|this|that|our|his|her|their|your)")
    + r"\s+([a-z]+)\s+(?:needs to be|need to be|should be|must be|has to be|have to be|will be|is|are|was|were)\s+"
    r"(?:very |really |so |quite |too |a bit |more |less |kept )?$",
    _I,
)
_ANSWER_NOUNS = frozenset(
    [
        "answer",
        "answers",
        "reply",
        "replies",
        "response",
        "responses",
        "explanation",
        "explanations",
        "message",
        "messages",
        "text",
        "texts",
        "output",
        "writing",
        "responding",
        "replying",
        "answering",
        "language",
        "style",
        "tone",
    ]
)
_EN_LEARNING = re.compile(
    _w(r"(?:learn|learning|study|studying|practi[cs]e|practi[cs]ing|improve|improving|teach|teaching|master)")
    + r"\s+(?:my\s+|some\s+|more\s+|better\s+)?$",
    _I,
)
# "I only read English", "I can only understand Chinese": a need that says which language to answer in.
_ONLY_CAN = re.compile(_w(r"(?:only|can only|only really)") + r"\s+(?:read|understand|speak)\s+(?:well\s+)?$", _I)
_PREFERENCE_BEFORE = re.compile(_w(r"(?:prefer|like|want|rather|love|need|'d|would)"), _I)
_EN_FACT = re.compile(
    r"(?:^|[\s,])(?:i|i'm|im|i am|we|we're|my \w+)\s+(?:\w+\s+){0,2}?(?:speak|know|study|studied|studying|learn|"
    r"learning|learned|learnt|teach|teaching|understand|read|practi[cs]e|practi[cs]ing|grew up|was born|"
    r"am from|live|lived|improve|improving|took|taking|passed|failed|watch|watching|listen|listening|"
    r"bought)\s+(?:\w+\s+){0,2}?$",
    _I,
)
_ZH_FOLLOWERS = re.compile(
    r"^(?:[^\u3400-\u9fff]|$|回|答|复|说|讲|写|交流|交谈|讨论|沟通|聊|对话|就|吧|呀|啊|哈|哦|噢|喔|呢|了|好|行|向我|帮我|替我|为我|打|发|"
    r"可|来|进行|作答|表达|解释|讲解|吗|么|和我|跟我|对我|给我|与我|同我|地|分析|剖析|探讨|展开|介绍|阐明|举例|列|带|总结|概括|"
    r"的(?:回|答|解|方式|形式|版本|内容|表述|文字|描述|分析|讲解|介绍|句子|话|说明|风格|语言|长度|篇幅|东西|就|吧|[，。,.!！]|$|\s*[a-z]|"
    r"步骤|例子|过程|推导|讲述|信息|资料|说法|理由|原因|思路|论述|阐述|版本)|"
    r"版|模式|即|也|或|还|为主|作为|为|输出|描述|阐述|说明|表述|文字|内容|，|哟|嘛|呗|啦|喽|咯|撰写|书写|展示|呈现|"
    r"简|详|短|长|多|少|一点|一些|一下|点|些|儿|谢|please|pls|plz|thx|thanks|[a-z]|\d|🙏|😊|🙂|❤)",
)
_ZH_INTRO = re.compile(r"(?:用|说|讲|以|拿|使用|改用|换成|换用|切换到|切换成|全用|都用|只用|请用|说用)\s*$")
_ZH_PERCEIVE = re.compile(r"(?:看|读|听)\s*$")
_ZH_PREFERS = re.compile(r"喜欢|习惯|希望|想|爱|偏好|要|prefer|like|love|want")
_ZH_FACT = re.compile(
    r"(?:学|学习|练|练习|懂|考|教|背|报|读了|看了|买了|在学|在练|我的|他的|她的|你的)\s*(?:一本|一部|一首|一门|一些|一点)?\s*$"
    r"|(?:我|我们)(?:在|正在|也|还|都)?(?:会|能|可以)(?:说|讲|写|看|读|听)(?:一点|一些|点|流利的|很好的|几句)?\s*$"
)
_STYLE_WORD = re.compile(
    _w(r"(?:short|shorter|brief|long|longer|detailed|concise|quick|simple|plain|clear|formal|casual|friendly)"), _I
)


_EN_SPECIFIC = re.compile(
    _w(r"(?:thanks|thank you|thx|ty|cheers)")
    + r"(?: so much| a lot| very much)?(?: for)? (?:the|your|that|this|such an?)\s+(?:[a-z]+\s+)?$"
    + "|"
    + _w(r"(?:that|this|it) (?:was|is)(?: such)? (?:a|an)?")
    + r"\s*(?:really |very |nice |great |good )?(?:[a-z]+,? (?:and|or) )?$",
    _I,
)
_CONJUNCTION = re.compile(r"\s*(?:and|or|&|/)\s+[a-z]+(.*)", _I)


# Things a detail word may describe that are not answers: "a detailed conversation", "a short story".
# For detail words the list is of things (an open world of answer forms — breakdowns, walkthroughs,
# write-ups — stays admitted); for language names the list is of what may follow (_EN_FOLLOWERS).
_NOT_ANSWERS_EN = frozenset(
    [
        "conversation",
        "conversations",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "trip",
        "trips",
        "plan",
        "plans",
        "book",
        "books",
        "novel",
        "novels",
        "story",
        "stories",
        "report",
        "reports",
        "documentary",
        "movie",
        "movies",
        "film",
        "films",
        "video",
        "videos",
        "article",
        "articles",
        "presentation",
        "presentations",
        "meeting",
        "meetings",
        "email",
        "emails",
        "letter",
        "letters",
        "life",
        "hair",
        "walk",
        "break",
        "nap",
        "vacation",
        "holiday",
        "visit",
        "call",
        "calls",
        "lecture",
        "lectures",
        "class",
        "classes",
        "course",
        "courses",
        "map",
        "maps",
        "recipe",
        "recipes",
        "question",
        "questions",
        "drive",
        "flight",
        "commute",
        "weekend",
        "dress",
        "skirt",
        "song",
        "songs",
        "poem",
        "poems",
        "speech",
        "essay",
        "paper",
        "document",
        "documents",
        "manual",
        "manuals",
        "night",
        "chat",
        "itinerary",
        "schedule",
        "proposal",
        "resume",
        "cv",
        "contract",
        "budget",
        "timeline",
        "agenda",
        "update",
        "updates",
        "note",
        "notes",
        "haircut",
        "pause",
        "moment",
        "visit",
        "stay",
        "interview",
    ]
)
_NOT_ANSWERS_ZH = re.compile(
    r"^(?:的)?(?:计划|小说|电影|书|报告|故事|文章|会议|旅行|日记|邮件|信|视频|纪录片|课|歌|诗|演讲|论文|地图|菜谱|衣服|"
    r"头发|一天|假期|旅程|路|天|周|梦|方案|行程|攻略|简历|合同|预算|日程|安排|清单)"
)


def _english_detail_about_else(before: str, after: str) -> bool:
    if _EN_SPECIFIC.search(before) or _EN_POSSESSED.search(before):
        return True
    subject = _EN_SUBJECT.search(before)
    if subject and subject.group(1) not in _ANSWER_NOUNS:
        return True
    described = _EN_DESCRIBED.search(before)
    if described and not re.search(r"answers?|repl|respons|explanation|\bit\b|prefer|being|keep", before):
        return True
    following = re.match(r"\s*([a-z']+)", after)
    return bool(following and following.group(1) in _NOT_ANSWERS_EN)


def _english_about_else(before: str, after: str) -> bool:
    if _EN_SPECIFIC.search(before):
        return True  # "Thanks for the detailed answer!": one past answer, not a preference
    chained = _CONJUNCTION.match(after)
    if chained and re.match(r"\s*(?:are|were|is)\b", chained.group(1)):
        after = chained.group(1)  # "English and Chinese are both important languages"
    if _EN_POSSESSED.search(before):
        return True  # "my English is bad", "correct my English"
    subject = _EN_SUBJECT.search(before)
    if subject and subject.group(1) not in _ANSWER_NOUNS:
        return True  # "My presentation needs to be short"
    described = _EN_DESCRIBED.search(before)
    if described and not re.search(
        r"answers?|repl|respons|explanation|it\b|prefer|language|choice|default|favou?rite|being", before
    ):
        return True  # "that book was very detailed"
    if _EN_LEARNING.search(before) or (
        _EN_FACT.search(before) and not _PREFERENCE_BEFORE.search(before) and not _ONLY_CAN.search(before)
    ):
        return True  # "I speak English", "I'm learning Spanish", "I want to learn English"
    following = re.match(r"\s*([a-z']+)(.*)", after)
    if not following:
        return False
    word, rest = following.group(1), following.group(2)
    if word in _PREDICATE:
        return not _PREFERRED.search(rest[:40]) and not _EN_INTRO.search(before)  # "English is hard"
    if word in _EN_FOLLOWERS or _STYLE_WORD.fullmatch(word):
        return False
    return not _EN_INTRO.search(before)  # "Chinese food", "English class"


_ZH_DESCRIBED = re.compile(r"得(?:很|非常|挺|太|真|特别|相当|十分|超|好)$|(?:很|非常|挺|真|特别|相当|十分)$")
_ZH_REQUEST_NEAR = re.compile(r"请|要|希望|想|喜欢|点|一些|些|吧|以后|今后|尽量|麻烦|务必|一定")
_ZH_AFTER_NEGATED = re.compile(
    r"^[^，。,！!？?]{0,6}?(?:看不懂|听不懂|不懂|不要|不喜欢|不需要|受不了|不习惯|太难|很难|不好|就算了|就免了|不用了|免了|"
    r"算了|不要了|不需要了|没必要|就不必了)"
    r"|^[^，。,！!？?]{0,4}?(?:就别了|就不要了|别了)"
    r"|^\s*(?:answers?|replies|responses)?\s*(?:\?|,)?\s*(?:no thanks|no thank you|not for me|please no|no way|nope|"
    r"nah|please don't|don't|do not)(?![a-z])"
    r"|^\s*(?:answers?|replies|responses)?\s*(?:is|are)\s*(?:not|n't|never)\s+(?:what i want|for me|my thing|ideal|"
    r"helpful|great|good|what i need|what i like)"
)
# Indifference: "English or Chinese, whatever", "中英文都可以", "either is fine" state no preference.
INDIFFERENT = re.compile(
    _w(
        r"(?:whatever|doesn't matter|does not matter|don't care|do not care|no preference|either way|any language|"
        r"either is fine|both are fine|either one|bilingual|both (?:languages|are ok|work))"
    )
    + r"|无所谓|都行|都可以|都可|随便|不在乎|没关系|中英文|中英双语|双语|英中|哪种都|哪个都",
    _I,
)


_ZH_DETAIL_FOLLOWERS = re.compile(r"^(?:比较|最好|更好|为好|为宜|挺好|好些|合适|越)")
_ZH_LANGUAGE_BEST = re.compile(r"^(?:最好|为好|更方便|最方便|就够了|优先|更容易|更舒服|更习惯|看着舒服)")


_ZH_SPECIFIC = re.compile(r"(?:谢谢|感谢|多谢)(?:你|您)?(?:的|这么|如此)?[^，。,]{0,3}$")
_ZH_SPEAKER_FACT = re.compile(r"(?:^|[，,。])\s*我(?:们)?(?:平时|一般|通常|主要|日常|在家|母语)?(?:说|讲)\s*$")


def _chinese_about_else(before: str, after: str, clause: str, detail: bool) -> bool:
    if _ZH_SPECIFIC.search(before):
        return True  # "谢谢你详细的回答": one past answer
    if _ZH_SPEAKER_FACT.search(before):
        return True  # "我说中文": what the user speaks
    if _ZH_INTRO.search(before):
        return False
    if _ZH_FACT.search(before) or (_ZH_PERCEIVE.search(before) and not _ZH_PREFERS.search(before)):
        return True  # "我在学英文", "我会说一点英语", "我的英文", "我在看英文书" (not "我喜欢看详细的回答")
    if _ZH_DESCRIBED.search(before) and not _ZH_REQUEST_NEAR.search(clause):
        return True  # "这本书写得很详细": a description, not a request
    if not detail and _ZH_LANGUAGE_BEST.match(after):
        return False  # "中文最好"
    if detail and _ZH_DETAIL_FOLLOWERS.match(after):
        return False  # "回答短一些比较好", "越详细越好"
    return not _ZH_FOLLOWERS.match(after)


_REMARK_EN = re.compile(
    r"^\s*(?:but |and |so |why )?you(?:'ve| have)? (?:always |usually |often |never |just |keep |kept |seem to |still |"
    r"already |again )*(?:answered|answers|replied|replies|responded|responds|wrote|writes|spoke|speaks|used|uses|"
    r"gave|gives|keep|kept|using|answering|replying|talking|writing)(?![a-z])"
    r"|^\s*(?:but |and |so )?you (?:always|usually|often|never|still) "
    r"(?:answer|reply|respond|write|speak|use|give|talk)(?![a-z])",
    _I,
)
_REMARK_ZH = re.compile(r"^\s*(?:但是?|可是)?你(?:总是|老是|又|刚才|上次|经常|每次都|一直都|怎么)")
_DIRECTS = re.compile(
    _w(r"(?:please|pls|should|must|need to|have to|will|can|could|would|from now on|always|keep doing|going forward)")
    + r"|请|要|应该|以后|今后|继续|保持|就好|就行|吧|能|可以",
    _I,
)


def remarks_on_answers(reading: st.Reading, mention: st.Mention) -> bool:
    """A remark on the assistant, not a request: "You always answer in Chinese.", "你总是用英文回答"."""
    start, end = reading.spans[mention.clause]
    clause = reading.text[start:end]
    english = _REMARK_EN.match(clause)
    if english is not None:
        return not _DIRECTS.search(clause[english.end() :])
    return bool(_REMARK_ZH.match(clause)) and not _DIRECTS.search(clause)


def about_something_else(reading: st.Reading, mention: st.Mention) -> bool:
    """Is this mention about a thing other than the answers (a noun it modifies, a fact about the user)?"""
    if remarks_on_answers(reading, mention):
        return True
    clause_start, clause_end = reading.spans[mention.clause]
    before = reading.text[clause_start : mention.start]
    after = reading.text[mention.end : clause_end]
    word = reading.text[mention.start : mention.end]
    detail = not mention.label.startswith("language")
    if re.search(r"[a-z]", word):
        return _english_detail_about_else(before, after) if detail else _english_about_else(before, after)
    if detail and not _ZH_FACT.search(before) and not _ZH_SPECIFIC.search(before):
        described = _ZH_DESCRIBED.search(before) and not _ZH_REQUEST_NEAR.search(reading.text[clause_start:clause_end])
        return bool(described or _NOT_ANSWERS_ZH.match(after))
    return _chinese_about_else(before, after, reading.text[clause_start:clause_end], detail)


def negated_after(reading: st.Reading, mention: st.Mention) -> bool:
    """ "英文的回答我看不懂": the mention is refused by what follows it in its clause."""
    after = reading.text[mention.end : reading.spans[mention.clause][1]]
    return bool(_ZH_AFTER_NEGATED.search(after))


# ---------------------------------------------------------------------------------------------
# Does the quote ask, answer or prefer anything at all?
# ---------------------------------------------------------------------------------------------

_ASKING = re.compile(
    "|".join(
        [
            _w(
                r"(?:answer|answers|answering|answered|reply|replies|replying|respond|responding|response|responses|"
                r"write|writing|wrote|written|talk|talking|speak|speaking|explain|explaining|explanation|"
                r"explanations|tell|say|use|using|communicate|chat|message|messages|text|output|keep|give|stick|"
                r"switch|go|make|be|stay|describe|walk|break|spell|cut|skip|stop|avoid|don't|do|never|limit|"
                r"prefer|preferred|preference|like|love|want|wanted|need|rather|appreciate|help|helps|best|works|"
                r"suits|ok|okay|fine|great|good|better|ideal|perfect|please|pls|plz|kindly|always|only|default|"
                r"thanks|thank|thx|could you|can you|would you|will you|let's|should|must|version|style|format|"
                r"would|i'd|sentences|words|lines|bullets?|paragraphs?|summary|summaries|details?)"
            ),
            r"回|答|复|说|讲|用|写|解释|交流|沟通|聊|请|麻烦|劳驾|拜托|以后|今后|希望|喜欢|想|要|需要|就行|就好|即可|"
            r"吧|点|些|别|不要|不用|尽量|默认|谢谢|给我|跟我|和我|对我|习惯|偏好|最好|适合|可以|能|行|好|多|少|句|字|篇幅",
        ]
    ),
    _I,
)


def asks_anything(text: str) -> bool:
    return bool(_ASKING.search(text)) or has_durable_marker(text)  # "In English from now on."


# ---------------------------------------------------------------------------------------------
# A task (specific content) rather than a way of answering
# ---------------------------------------------------------------------------------------------

_GENERIC = frozenset(
    [
        "everything",
        "things",
        "stuff",
        "anything",
        "something",
        "it",
        "all",
        "topics",
        "topic",
        "concepts",
        "concept",
        "subjects",
        "subject",
        "questions",
        "question",
        "issues",
        "problems",
        "ideas",
        "idea",
        "whatever",
        "any",
        "every",
        "each",
        "matters",
        "points",
        "point",
        "examples",
        "example",
        "reasoning",
        "steps",
        "step",
        "answer",
        "answers",
        "reply",
        "replies",
        "response",
        "responses",
        "explanation",
        "explanations",
        "me",
        "you",
        "us",
        "like",
        "would",
        "expert",
        "beginner",
        "newbie",
        "child",
        "kid",
        "friend",
        "back",
        "straight",
        "habit",
        "rule",
        "sure",
        "way",
        "clear",
        "plain",
    ]
)


_ZH_TASK = re.compile(
    r"(?:写|做|画|编|起草|生成|列|拟)(?:一|几|两|三|个)?(?:封|篇|首|个|份|段|张|条|句|下)|帮我|替我|翻译|润色|改一下|改改|检查一下|"
    r"(?:介绍|讲讲|说说|总结|描述)(?:一下)?(?!(?:得|的|清楚|明白|一点|点|些|原理|细节|原因|就|即|吧))[\u4e00-\u9fff]{2,}"
)
_EN_EDIT_TASK = re.compile(
    r"^\s*(?:(?:please|pls|can you|could you|would you|just|now)\s+)*(?:correct|proofread|edit|rewrite|rephrase|"
    r"polish|translate|fix|improve)\s+(?:my|this|the|these|that|it)\b",
    _I,
)
_ANSWER_VERB_START = re.compile(
    r"^\s*(?:(?:please|pls|plz|kindly|just|also|and|so|now|then|always)\s+)*(?:answer|reply|respond)(?![a-z])"
    r"|^\s*(?:请|麻烦|以后)?(?:回答|回复|答复)",
    _I,
)


def is_task(reading: st.Reading, view: st.ClauseView) -> bool:
    """A request for specific content ("Tell me about Paris in detail", "给我讲讲量子力学"): a task verb whose
    clause names something other than generic words, in a quote with no standing marker."""
    if has_durable_marker(reading.text):
        return False
    if _ZH_TASK.search(view.text) or _EN_EDIT_TASK.match(view.text):
        return True
    if not st.is_task(view):
        return False
    if _ANSWER_VERB_START.match(view.text) and not re.search(r"\b(?:about|on|regarding)\b|关于|有关", view.text):
        return False
    residue = [word for word in view.residue if word not in _GENERIC]
    return bool(residue)
