"""One small detector per refusal reason (docs/long-term-memories.md, "Refusal reasons").

A preference whose claimed fields the quote states is admitted *unless* one of these finds its reason
in the quote. Each detector reads the normalised quote (statements.normalize_text: NFKC, lower case,
traditional characters folded) in English, Chinese or both mixed, and answers True when its reason
holds. They are deliberately narrow: a detector that fires on an ordinary instruction is a false
refusal, so each one names the construction of its reason ("used to", "以前"), not a topic.

`hedge`, `one_off` and `other_person` keep their older, larger lexicons in statements.py; the ones here
are the reasons the rules did not name before (past, hypothetical, temporary, question) and the
widening of hedge and other_person that real writing needed.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE


def _w(word: str) -> str:
    return rf"(?<![a-z']){word}(?![a-z])"


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), _I)


# ---------------------------------------------------------------------------------------------
# past: a preference that no longer holds
# ---------------------------------------------------------------------------------------------

_PAST = _rx(
    r"(?<![a-z'])(?<!am )(?<!'m )(?<!be )(?<!get )(?<!got )(?<!are )(?<!is )(?<!getting )"
    r"used to(?= )(?! (?:it|this|that|them)\b)",
    _w(r"i once"),
    _w(r"once upon a time"),
    _w(r"back (?:then|when|in (?:the day|college|school|uni|university|\d{4}|my|those|high school)|in the day)"),
    _w(r"in the past"),
    _w(r"previously"),
    _w(r"formerly"),
    _w(r"(?:years|months|weeks|a while|long|some time|a few \w+|a couple of \w+) (?:ago|back)"),
    _w(r"(?:was|were) (?:my|all i|what i) (?:thing|preference|go-to|favou?rite|choice|style|wanted|liked|needed)"),
    _w(r"i was (?:all about|into|a fan of|big on)"),
    _w(r"(?:my )?(?:preference|choice|go-to) (?:was|used to be)"),
    _w(r"before i (?:moved|started|changed|switched|got|became|left|graduated|retired|learned|learnt)"),
    _w(r"when i was (?:a |an |in |at |young|little|younger|still|studying|at school)"),
    _w(r"as a (?:kid|child|teenager)"),
    _w(r"i (?:preferred|liked|wanted|loved|needed|asked for|used)")
    + r"(?! to (?:say|ask|tell|let|mention|remind|check|request|clarify|make|add|note|point))"
    + r"(?![^.,;!?]*(?:now|still|again))",
    _w(r"that was (?:before|then|years)"),
    _w(r"(?:in|at|during) my (?:previous|old|last|former|first) (?:job|school|role|company|life|years?)"),
    _w(r"(?:my|the) (?:old|former|previous|earlier|original) (?:preference|setting|habit|choice|way)"),
    _w(r"there (?:was|were) (?:a time|times|days)"),
    _w(r"earlier (?:this|last) (?:year|month|week)"),
    _w(r"(?:i'd|i had|i have) (?:always )?(?:preferred|liked|wanted|used)"),
    _w(r"would (?:always |usually |often )?(?:ask for|want|prefer|like)")
    + r"[^.;!?]*"
    + _w(r"(?:back then|in the past|before|as a kid|as a student|when i was)"),
    _w(r"would(?:'ve| have) (?:wanted|liked|preferred|loved|chosen)"),
    _w(r"(?:last|previous) (?:year|semester|month|summer|winter|time)"),
    _w(r"(?:yesterday|the other day|earlier today)"),
    r"以前|之前我|过去|曾经|从前|小时候|那时候?|当年|当时|早些年|前几年|去年|原来我|我原来|我原先|原先|那会儿?|那阵子|那段时间|"
    r"那几年|早先|当初|一度|前阵子|前段时间|前些日子|上个月|上周|上学期|上次|昨天|(?:上|读|念)(?:大学|高中|中学|小学|初中|学|书|研究生|研|硕士|博士)的?(?:时候|时)",
)
# "…but now …", "现在…": the past part is contrasted with a preference that holds now.
_NOW = _rx(_w(r"(?:now|nowadays|these days|from now on|today on|currently)"), r"现在|如今|从此|以后|今后|往后|目前")


_OWN_DIRECTIVE = _rx(
    r"^\s*(?:(?:but|so|and|then|now)\s+)?(?:please|pls|plz|kindly|always|just|answer|reply|respond|use|keep|be|give|"
    r"write|talk|speak|stick|switch|make|explain)(?![a-z])",
    r"^\s*(?:但是?|所以|那|现在)?(?:请|麻烦|以后|今后|你|用|回答|回复|说|讲)",
)


def past_at(text: str, clause: tuple[int, int], position: int) -> bool:
    """Is the mention at `position` said of the past? Its clause has a past marker and no "now", or the last
    marker before it is a past one and its own clause does not direct ("I used to like English, and Chinese
    too": Chinese is past; "I used Chinese last time, but please answer in English": English is not)."""
    start, end = clause
    segment = text[start:end]
    if _PAST.search(segment):
        return not _NOW.search(segment)
    if _OWN_DIRECTIVE.search(segment):
        return False
    markers = [(m.start(), "past") for m in _PAST.finditer(text, 0, position)]
    markers += [(m.start(), "now") for m in _NOW.finditer(text, 0, position)]
    return bool(markers) and max(markers)[1] == "past"


def is_past(text: str) -> bool:
    match = _PAST.search(text)
    if not match:
        return False
    return not _NOW.search(text, match.end()) and not _NOW.search(text[: match.start()])


# ---------------------------------------------------------------------------------------------
# hypothetical: a counterfactual, not the user's preference
# ---------------------------------------------------------------------------------------------

_HYPOTHETICAL = _rx(
    _w(r"if i (?:were|was|had|became|ever became|ever were|ever had|did|could)"),
    _w(r"if i (?:am|'m) ever"),
    _w(r"were i"),
    _w(r"had i"),
    _w(r"suppos(?:e|ing)"),
    _w(r"imagine"),
    _w(r"hypothetical(?:ly)?"),
    _w(r"in theory"),
    _w(r"theoretically"),
    _w(r"let's say"),
    _w(r"say i (?:was|were|had)"),
    _w(r"in (?:a|another) (?:world|life)"),
    _w(r"if (?:someday|one day|ever)"),
    _w(r"if i ever"),
    _w(r"if i (?:\w+ed|spoke|knew|lived|went|had|were|was|could|did|got|became|understood|wrote|read|took|grew)")
    + r"[^.;!?]*"
    + _w(r"(?:i'd|i would|i might|i'd probably|i would probably)"),
    _w(r"in case i ever"),
    _w(r"if only"),
    _w(r"what if"),
    _w(r"pretend(?:ing)?"),
    _w(r"role[- ]?play"),
    _w(r"in an? (?:ideal|perfect|other|different|alternate) (?:world|universe|life)"),
    _w(r"in (?:that|such a|this) (?:case|scenario|situation)"),
    _w(r"(?:would|'d)(?:'ve| have) (?:wanted|liked|preferred|loved|chosen|asked)"),
    _w(r"(?:i|i'd|i would) (?:probably |maybe |then )?(?:want|prefer|like|need) [^.;!?]*" + r"\b(?:if|were|had) i\b"),
    _w(r"i (?:would|'d) (?:probably |maybe )?(?:want|prefer|like|need|love|choose|pick|go for)")
    + r"[^.;!?]*"
    + _w(r"if (?!possible|you (?:can|could|don't|do not|would|wouldn't)|that's|it's ok|you're able)"),
    r"(?:如果|要是|若是|假若|若)[^。！!?？]{0,24}?我(?:就|会|就会|可能会|应该会|大概会|也会|才会)(?:想|希望|喜欢|要|让|选|偏好|更喜欢|需要|比较喜欢)|"
    r"要是我|如果哪一天|假如|假设|假使|倘若|如果我是|要是我是|如果我当|要是我当|如果我有|要是我有|如果我成为|如果我变成|设想|想象一下|万一我|要是哪天|如果哪天|如果有一天|如果我还是|要是我还是",
)


def is_hypothetical(text: str) -> bool:
    return bool(_HYPOTHETICAL.search(text))


# ---------------------------------------------------------------------------------------------
# temporary: a bounded period (today, this session, this week), not a standing preference
# ---------------------------------------------------------------------------------------------

_TEMPORARY = _rx(
    _w(r"today"),
    _w(r"tonight"),
    _w(r"this (?:morning|afternoon|evening|week|weekend|month|session|chat|conversation|thread|trip|semester)"),
    _w(r"for (?:the rest of )?(?:this|the current|our current) (?:session|chat|conversation|thread|week|month)"),
    _w(r"(?:for|during|in) the (?:next|coming) (?:\w+ )?(?:minutes?|hours?|days?|weeks?|months?)"),
    _w(r"for (?:a|an|one|two|a few|the next|a couple of) (?:\w+ )?(?:minutes?|hours?|days?|weeks?)"),
    _w(r"for (?:now|the moment|the time being|the day|the week)"),
    _w(r"until (?:tomorrow|tonight|monday|tuesday|wednesday|thursday|friday|saturday|sunday|next|the end|i'm back|my)"),
    _w(r"till (?:tomorrow|tonight|next|the end)"),
    _w(r"(?:temporar(?:y|ily)|for a bit|right now|at the moment|just for now)"),
    _w(r"while i(?:'m| am) (?:traveling|travelling|abroad|away|on|in|at|busy|sick|studying|preparing)"),
    _w(r"this (?:one )?time only"),
    r"今天|今晚|今早|今天下午|这周|本周|这个星期|这星期|这礼拜|这个月|本月|这几天|这两天|这段时间|这阵子|最近几天|接下来几天|"
    r"接下来的?(?:一|两|几|\d)?(?:个)?(?:小时|天|周|星期|礼拜)|这个会话|本次会话|这次会话|这个对话|本次对话|这次对话|这轮对话|"
    r"这次聊天|这个聊天|暂时|临时|暂且|目前先|先这样|明天之前|周末之前|考试前|出差期间|这学期",
)
# "from today on", "starting today", "从今天起": a start, the preference then stands.
_STANDING_START = _rx(
    _w(r"from today(?: on(?:wards)?)?"),
    _w(r"(?:starting|beginning|as of) (?:today|now|this week)"),
    _w(r"from now on"),
    _w(r"from this (?:moment|point) on"),
    r"从今天(?:起|开始)|今天起|今天开始|今天以后|今天之后|从今往后|从现在(?:起|开始)|从这周(?:起|开始)|从本周(?:起|开始)|"
    r"从这个月(?:起|开始)",
)


def is_temporary(text: str) -> bool:
    return bool(_TEMPORARY.search(_STANDING_START.sub(" ", text)))


# ---------------------------------------------------------------------------------------------
# question: it asks (about ability, opinion or a choice) rather than states or requests
# ---------------------------------------------------------------------------------------------

_QUESTION_MARK = re.compile(r"[?？]")
# Openers before a question or a request: "Wait, do you only reply in English?"
_INTERJECTION = (
    r"wait|hmm+|um+|uh+|er+m?|oh|ah|sorry|hold on|actually|honestly|seriously|really|by the way|quick q|"
    r"curious|question|well|right|hey there|yo|just wondering|wondering|i'm curious|i am curious|quick question"
)
# A request in question form is an instruction: "Could you answer in English from now on?", "能用中文回答吗？"
_EN_REQUEST = _rx(
    r"^\s*(?:(?:so|and|but|hey|also|ok|okay|please|pls|from now on|going forward|in future|"
    + _INTERJECTION
    + r")[,\s]+)*"
    r"(?:can|could|would|will|won't) (?:you|u)(?: please| kindly| just| always| maybe)? "
    r"(?!even |really |actually |speak|understand|read|know|handle|do |manage|support|write chinese|write english|"
    r"prefer|rather|like me|want me|like it if i|think|say|recommend|suggest)",
    r"^\s*(?:(?:so|and|but|hey|also|ok|okay|please|pls)[,\s]+)*"
    r"(?:would you mind|do you mind|mind|how about|why don't you|"
    r"is it ok(?:ay)? if you|would it be possible (?:for you )?to|can we|could we|shall we|"
    r"(?:can|could|may) i (?:get|have|ask (?:you|for)|request|please get|please have))",
)
_EN_ASKS = _rx(
    r"^\s*(?:(?:so|and|but|hey|also|ok|okay|just curious|out of curiosity|quick question|btw|"
    + _INTERJECTION
    + r")[,:—–\s-]+)*"
    r"(?:do|does|did|is|are|was|were|should|shall|which|what|how|why|who|where|when|have|has|am|isn't|aren't|"
    r"don't|doesn't|wouldn't)(?![a-z'])",
    r"^\s*(?:would|could|can|will|might)\s+(?!you\b|u\b|we\b)[a-z]+",
    _w(
        r"(?:can|could|do|does|will) you (?:even |really |actually )?"
        r"(?:speak|understand|read|know|handle|manage|support|do)"
    ),
    _w(r"are you able to"),
    _w(r"(?:would|do|will|did) you (?:prefer|rather|like me|want me|like it if i|think|recommend|suggest|mind if i)"),
    _w(r"is it (?:possible|better|ok|okay|fine)"),
    _w(r"or not"),
    # Wondering aloud what the assistant can do: "I was wondering if you could speak Chinese?"
    _w(r"(?:i was|i am|i'm|just) wondering (?:if|whether) (?:you|u) (?:can|could|are able to)")
    + r"\s+(?:speak|understand|read|write|know|handle|do|support)(?![a-z])",
    # The user asking leave for themselves: "我能要求简短一点的回答吗？"
    r"^\s*(?:请问)?我(?:能|可以|可不可以|能不能)(?:要求|请求|申请|问)",
    # A statement about the assistant said as a question: "So you can do detailed answers?", "You speak Chinese?"
    r"^\s*(?:(?:so|and|wait|oh|ok|okay|hmm+|but)[,\s]+)*(?:you|u) (?:can|can't|could|do|don't|only|really|actually|"
    r"speak|know|understand|support|are|aren't|'re|also|always|usually|never|prefer|like)(?![a-z])"
    r"(?![^?]*\b(?:from now on|please|pls|going forward|by default)\b)",
)
_ZH_REQUEST = _rx(
    r"(?:能|可以|可不可以|能不能|能否|行不行|好不好|好吗|行吗|可以吗|成吗|好么|麻烦|请|劳驾)",
)
_ZH_ASKS = _rx(
    r"你(?:会|懂|能听懂|看得懂|听得懂|能看懂)(?:不会)?(?:说|讲|写|用|看|读)?[^，。,]{0,24}?[吗么嘛]",
    r"你(?:会不会|懂不懂)",
    r"你(?:能|可以)(?:说|讲|写|看|读|听)(?:懂)?[^，。,]{0,12}?(?:吗|么|嘛)(?!.*(?:回答|回复|跟我|和我|对我|以后))",
    r"(?:是不是|是否|有没有|要不要|需不需要|喜不喜欢|喜欢[^，。,]{0,8}吗|觉得[^，。,]{0,12}[吗呢]|哪个|哪种|哪一种|什么语言|什么样|怎么样|为什么|为啥|多长|多短)",
    r"还是[^，。,？?]{0,10}[？?]",
    r"你(?:平时|一般|通常)?(?:用|说|喜欢)[^，。,]{0,10}[吗呢]",
    r"(?:对吗|对吧|是吗)",
    r"你(?:能|可以)?支持",  # "请问你支持中文回答吗": what the assistant supports
    r"(?:你觉得|你说呢|你看呢|你怎么看)[\s?？]*$",  # "简短回答行不行啊，你觉得？": asks an opinion
    r"(?:会不会|是不是|是否)(?:更|比较|太|有点)",
)


_BARE_QUESTION = _rx(
    r"^\s*(?:do|does|did|is|are|which|what|why|how(?! about))\s+(?:you|your|it|the|short|long|detailed|brief|"
    r"english|chinese|answers?|replies)\b(?!.*\b(?:please|pls|plz)\b)"
)


def is_question(text: str) -> bool:
    """A question that asks about the assistant, an opinion or a choice; a request phrased as a question
    ("Could you reply in English?", "可以用中文回答吗？") is not one."""
    stripped = text.strip()
    zh_question = bool(_QUESTION_MARK.search(stripped) or re.search(r"[吗么呢][\s。!！~～]*$", stripped))
    if not zh_question:
        return bool(_BARE_QUESTION.search(stripped)) and not re.search(r"[.!。！]\s*\S", stripped)
    sentences = [s for s in re.split(r"(?<=[.!。！;；\n])", stripped) if s.strip()]
    asking = [s for s in sentences if _QUESTION_MARK.search(s) or re.search(r"[吗么呢][\s。!！~～]*$", s)]
    if len(asking) < len(sentences):
        return False  # a statement or instruction stands beside the question: judged by the other rules
    for sentence in asking:
        if _EN_REQUEST.search(sentence):
            continue
        if _EN_ASKS.search(sentence) or _ZH_ASKS.search(sentence):
            return True
        if re.search(r"[\u3400-\u9fff]", sentence) and not _ZH_REQUEST.search(sentence):
            return True  # a Chinese question without a request word ("中文好吗" has 好吗, "用中文呢？" has none)
    return False


# ---------------------------------------------------------------------------------------------
# hedge (widened) and other_person (widened)
# ---------------------------------------------------------------------------------------------

HEDGE_MORE = _rx(
    _w(r"kind of"),
    _w(r"kinda"),
    _w(r"sort of"),
    _w(r"sorta"),
    _w(r"i'm leaning"),
    _w(r"i am leaning"),
    _w(r"leaning towards?"),
    _w(r"not (?:entirely |totally |really |completely |100% )?(?:sure|certain)"),
    _w(r"unsure"),
    _w(r"i'm not positive"),
    _w(r"i suspect"),
    _w(r"or something"),
    _w(r"i'm guessing"),
    _w(r"might be"),
    _w(r"i wonder (?:if|whether) (?!you)"),
    _w(r"no idea"),
    _w(r"who knows"),
    r"不太确定|不确定|说不好|说不准|应该是吧|应该吧|大概吧|也许吧|或许吧|可能吧|我猜|不好说|拿不准|吧\?|吧？|好像是|貌似|感觉(?:我)?(?:好像|可能|应该)|应该会|我想我|不知道(?:我)?(?:是不是|要不要|喜不喜欢)",
)
_PARTY_EN = (
    r"(?:kids?|children|son|sons|daughters?|wife|husband|partner|spouse|mom|mum|mother|dad|father|parents?|"
    r"friends?|boss|manager|team|teammates?|colleagues?|coworkers?|co-workers?|students?|clients?|customers?|"
    r"users?|family|sister|brother|siblings?|grandma|grandpa|grandmother|grandfather|grandparents|aunt|uncle|"
    r"cousin|roommate|flatmate|classmates?|teacher|professor|girlfriend|boyfriend|fiancee?|neighbou?r|"
    r"readers?|audience|employees?|staff|assistant|supervisor|tutor|niece|nephew)"
)
OTHER_PERSON_MORE = _rx(
    _w(rf"(?:my|our|his|her|their|the) (?:\w+ )?{_PARTY_EN}(?:'s)?")
    + r"\s*(?:[a-z']+\s+){0,3}?(?:prefers?|likes?|loves?|wants?|needs?|hates?|asked|prefer|wanted|would like|"
    r"'d like|'d rather|would rather|enjoys?|said|says|told|tells|asks|insists|thinks|suggested|喜欢|希望|想要|偏好|"
    r"更喜欢|比较喜欢|习惯|要求|需要)(?![a-z])",
    _w(
        r"(?:he|she|they)(?:'s| is| are| really| also| usually| always| only| just)?\s+(?:[a-z']+\s+){0,2}?"
        r"(?:prefers?|likes?|loves?|wants?|needs?|hates?|wanted|asked|enjoys?)"
    ),
    _w(
        r"(?:everyone|everybody|most people|people|nobody|someone|somebody)\s+(?:[a-z']+\s+){0,4}?"
        r"(?:prefers?|likes?|loves?|wants?|needs?)"
    ),
    _w(r"(?:he|she|they)(?:'d| would) (?:rather|prefer|like|want|love)"),
    _w(
        rf"(?:he|she|they|(?:my|our|his|her|their) (?:\w+ )?{_PARTY_EN})\s+(?:always |usually |often |also |just )?"
        r"(?:answered|replied|responded|wrote|spoke|talked|speaks|writes|answers|replies|responds|talks)"
    ),
    r"^\s*(?!i\b|you\b|it\b|this\b|that\b|what\b|which\b|who\b|one\b|everything\b|nothing\b|english\b|chinese\b|"
    r"short\b|brief\b|detailed\b|answers?\b|replies\b|please\b|always\b|just\b|also\b)[a-z]+"
    r"\s+(?:always |really |usually |also |only |just |mostly |generally )?"
    r"(?:prefers|likes|wants|needs|loves|enjoys|asks for|would like|'d like|would rather|喜欢|希望)(?![a-z])",
    _w(r"(?!it|this|that|what|one|everything|nothing|english|chinese)[a-z]+'s (?:preference|choice|favou?rite)"),
    r"^\s*for (?:my|our) " + _PARTY_EN,
    r"^\s*(?:小|老|阿)[\u4e00-\u9fff](?:[\u4e00-\u9fff])?(?:也|总是|一直|比较|更)?(?:喜欢|希望|想要|偏好|习惯|要求|觉得)",
    r"^\s*[王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高郑梁谢宋唐韩冯于董萧程曹袁邓许傅沈曾彭吕苏卢蒋蔡贾丁魏薛叶阎余潘杜戴夏钟汪田任姜范方石姚谭廖邹熊金陆郝孔白崔康毛邱秦江史顾侯邵孟龙万段雷钱汤尹黎易常武乔贺赖龚文]"
    r"[\u4e00-\u9fff]{1,2}(?:也|总是|一直|比较|更)?(?:喜欢|希望|想要|偏好|习惯|要求|觉得)",
    r"(?:老婆|老公|妻子|丈夫|太太|先生|孩子|儿子|女儿|妈妈|妈|爸爸|爸|父母|朋友|同事|老板|领导|经理|客户|学生|老师|同学|室友|"
    r"女朋友|男朋友|他|她|他们|她们)\s*(?:prefers?|likes?|wants?|needs?|loves?)(?![a-z])",
    r"(?<!其)(?:我|我们)?(?:的)?(?:老婆|老公|妻子|丈夫|太太|先生|爱人|孩子|儿子|女儿|妈妈|妈|爸爸|爸|父母|朋友|同事|老板|领导|经理|"
    r"上司|客户|学生|老师|同学|室友|姐姐|哥哥|妹妹|弟弟|奶奶|爷爷|外婆|外公|姥姥|家人|女朋友|男朋友|女友|男友|团队|队友|"
    r"用户|读者|他们|她们|他|她|大家|别人|人家)[^，。,！!？?]{0,6}?(?:喜欢|想要|希望|偏好|偏爱|习惯|需要|要求|爱|更喜欢|比较喜欢|想)",
)


def speaks_of_someone_else(text: str) -> bool:
    return bool(OTHER_PERSON_MORE.search(text))


# ---------------------------------------------------------------------------------------------
# Standing markers: with one of these, a scope word elsewhere in the quote is context, not scope
# ---------------------------------------------------------------------------------------------

_ANY_STYLE_ZH = r"回答|回复|喜欢|希望|想|要|用|中文|英文|英语|简|详|短|长"
_DURABLE = re.compile(
    "|".join(
        [
            _w(r"from now on"),
            _w(r"going forward"),
            _w(r"(?:in|for) (?:the )?future"),
            _w(r"always"),
            _w(r"every ?time"),
            _w(r"whenever"),
            _w(r"by default"),
            _w(r"default(?:s)? to"),
            _w(r"in general"),
            _w(r"generally"),
            _w(r"all (?:of )?(?:your|the) (?:answers|replies|responses)"),
            _w(r"unless i (?:say|ask|tell)"),
            _w(r"until i (?:say|tell|ask)"),
            _w(r"from (?:here|this point|today) on"),
            _w(r"(?:for|in) (?:every|all|each) (?:answer|reply|response|question|message)s?"),
            _w(r"(?:each|every) (?:answer|reply|response)"),
            r"以后|今后|往后|之后都|从今以后|从现在|从今天|每次|每一次|一直|始终|总是|默认|一律|统一|全程|永远|所有(?:的)?(?:回答|回复)",
        ]
    ),
    _I,
)


# A standing marker said of the user's own life or quoted as a word does not make the request standing:
# "Summarize this article briefly; I'm always short on time", "Explain 'from now on' in Chinese".
_QUOTED = re.compile(r"'[^']{1,40}'|\"[^\"]{1,40}\"|“[^”]{1,40}”|「[^」]{1,40}」|‘[^’]{1,40}’")
_MARKER_CLAUSE = re.compile(r"[^,;:.!?，。；：！？—]+")
_ABOUT_ME = re.compile(
    r"^\s*(?:(?:and|but|because|since|as|cause|so)\s+)?(?:i|i'm|im|i am|i'll|i've|i'd)(?![a-z'])", _I
)
_ABOUT_ANSWERS = re.compile(
    r"(?<![a-z])(?:want|like|prefer|need|love|rather|answers?|repl|respon|explanations?|english|chinese|brief|"
    r"detail|concise|you|read|speak|understand|language)|" + _ANY_STYLE_ZH,
    _I,
)


def has_durable_marker(text: str) -> bool:
    unquoted = _QUOTED.sub(" ", text)
    for clause in _MARKER_CLAUSE.finditer(unquoted):
        if not _DURABLE.search(clause.group()):
            continue
        if _ABOUT_ME.search(clause.group()) and not _ABOUT_ANSWERS.search(clause.group()):
            continue  # "I'm always short on time": the user's life, not a way of answering
        return True
    return False


# ---------------------------------------------------------------------------------------------
# no_statement (widened): a remark on an answer, a greeting or a joke that asks for nothing
# ---------------------------------------------------------------------------------------------

# Praise, greetings and laughter: a social remark ("Wow, that detailed explanation was helpful."). A bare
# "thanks" closes a request ("Concise replies, thanks."); only "thanks for …" thanks for an answer.
_SOCIAL = _rx(
    _w(r"(?:thanks for|thank you for|wow|haha+|lol|lmao|good (?:morning|night|evening|afternoon)|hi|hello)"),
    r"^\s*(?:nice|cool|awesome)(?![a-z])",
    _w(r"(?:great job|well done|love it|didn't expect|just saying)"),
    _w(r"(?:that|this|the last|your last)(?: \w+){0,3} (?:was|is)"),
    r"哈哈|(?:谢谢|多谢|感谢)(?:你|您)?的|不错|厉害|早上好|晚安|你好|嗨|太棒了|真棒|好评",
)
# A joke takes back what it says: "English it is lol jk", "开玩笑的".
_JOKE = _rx(r"(?<![a-z])(?<!no )(?<!not )(?:jk|j/k|just kidding|kidding)(?![a-z])", r"开玩笑|逗你|说着玩")
# Anything that asks, prefers or directs: with one of these the remark carries a preference.
_ASKS_FOR = _rx(
    _w(r"(?:please|pls|plz|kindly|always|every ?time|by default|default|going forward|next time|in (?:the )?future)"),
    _w(r"(?:from now on|moving forward|from here on|keep|stick|stay|continue|more of|more like|like (?:that|this))"),
    _w(r"(?:prefer|preferred|rather|want|need|like|love|appreciate|enjoy|should|must|let's|give me|make (?:it|them))"),
    _w(r"(?:could|can|would|will) (?:you|u)"),
    _w(r"(?:would|'d) be (?:nice|great|good|helpful|better|ideal|lovely|perfect)"),
    r"^\s*(?:\w+[,!]\s*)?(?:answer|reply|respond|write|talk|speak|use|switch|be|explain|go|do|don't|never|stop)(?![a-z])",
    r"请|以后|今后|希望|喜欢|想要|要|保持|继续|一直|每次|默认|麻烦|给我|跟我|就这样|照这样|就行|就好|别|不要|用",
)


def states_nothing(text: str) -> bool:
    """A joke, or a social remark (thanks, praise of an answer, a greeting) with no word that asks or prefers:
    "Nice, short and sweet. Thanks!", "Good morning! Just saying hi in English.". "Thanks, keep it short
    like that" asks (keep), so it is judged by the other rules."""
    if _JOKE.search(text):
        return True
    return bool(_SOCIAL.search(text)) and not _ASKS_FOR.search(text)


# ---------------------------------------------------------------------------------------------
# one_off (widened): a style said before a question about some content
# ---------------------------------------------------------------------------------------------

# "In detail, what happened in 1989?", "Quickly, in English: how do I boil an egg?", "简单点，为什么天是蓝的？":
# the style is for the answer to that question. Questions about the answers themselves ("… what do you
# think?", "… can you?") are left to the question detector.
_CONTENT_QUESTION = _rx(
    r"[,:;，：；]\s*(?:so\s+|and\s+)?(?:what|how|why|who|where|when|which)(?:'s|'re| is| are| was| were| do| does| did|"
    r" can| should| would| will| many| much| happened| makes| causes| exactly)"
    r"(?! you (?:think|prefer|like|want|say|mean))"
    r"[^?？]*[?？]\s*$",
    r"[,:;，：；]\s*[^,:;，：；]{0,12}?(?:为什么|为啥|怎么(?!样的?回答)|如何|什么是|是什么|哪里|哪儿|多少|谁)[^,:;，：；]*[?？]\s*$",
)


def asks_about_content(text: str) -> bool:
    """A question about content after a style, or a quoted term to explain ("Explain 'from now on' in Chinese")."""
    return bool(_CONTENT_QUESTION.search(text) or _QUOTED.search(text))
