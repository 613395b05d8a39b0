"""Which lorebook entries fire for a turn, with SillyTavern's World Info semantics. Pure: no database, no clock.

Read from SillyTavern's `checkWorldInfo` (public/scripts/world-info.js) and its documentation, re-implemented:

- entries are taken in priority order: `order` descending, ties in book order (SillyTavern's stable sort);
- a pass visits every entry not yet fired: disabled ones are skipped; `delay` holds an entry back until the
  chat has that many messages; `delayUntilRecursion` entries wait for a recursion pass (of their level);
  `excludeRecursion` entries are not checked on recursion passes; `constant` entries fire; the others fire
  when a primary key matches the scanned text and the secondary keys satisfy `selectiveLogic`
  (0 AND ANY, 1 NOT ALL, 2 NOT ANY, 3 AND ALL; only when `selective` and there are secondary keys);
- the scanned text is the newest `scanDepth` messages (the entry's own, else the source's), newest first,
  plus, on recursion passes, the content of the entries fired so far (not `preventRecursion` ones);
- a key is a regex when written `/pattern/flags` (flags i, m, s; g, u, y ignored), else plain text,
  lower-cased unless `caseSensitive`; `matchWholeWords` wants a single-word key bounded by non-word
  characters (ASCII `\\W`, as JavaScript's);
- timed effects (SillyTavern's WorldInfoTimedEffects), counted in chat messages: the state carried from the
  previous visible turn (`TimedState`) is checked first: a `sticky`/`cooldown` effect ends once the chat has
  reached its `end` (a sticky one that ends starts the entry's cooldown there); an entry still sticky fires
  without its keys (`reason: "sticky"`), skips the recursion holds and the probability roll and wins its
  inclusion groups; one on cooldown (and not sticky) does not fire; `delay: n` holds an entry back until the
  chat has n messages. Every entry that fired starts its `sticky` and `cooldown` effects unless one runs;
- each pass's entries (sticky ones first, then by priority) are narrowed by inclusion `group`s (a
  comma-separated list of names): in a group with a sticky entry only the sticky ones stay; with group
  scoring (the entry's `useGroupScoring`, else the source's) only the entries matching the most keys stay;
  a group that already has an entry fired in an earlier pass keeps none; else one winner: the
  `groupOverride` entry of highest `order`, or a `groupWeight`-weighted roll seeded by the turn;
- the entries left are then rolled for `probability` (when `useProbability` and below 100) with a
  seeded hash, never a clock, and added while the characters of everything fired (its content, not the line
  breaks that join it) stay under the budget: the first entry that would reach it stops the scan (as
  SillyTavern's token budget does);
- recursion runs while a pass fired something that may recurse, up to `maxRecursionSteps` passes (0: no cap);
- the text is the fired entries in insertion order: ascending `order` (highest last, nearest the prompt end);
  `Activation.by_position` splits it by `position` (before/after the character definition, top/bottom of
  the author's note, before/after the example messages, and at a `depth` in the chat with its `role`).

A `vectorized` entry also fires, like a constant one, when the producer found its content close to the
scanned text (`ScanSettings.external`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

import re2

from memories.schemas import MAX_PROGRAM_SIZE

MAX_SCAN_DEPTH = 1000
_REGEX_KEY = re.compile(r"^/([\w\W]+?)/([gimsuy]*)$")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_JS_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")
_GROUP_SEPARATOR = re.compile(r",\s*")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a key RE2 refuses is plain text, not a line on stderr
LOGIC = {0: "AND ANY", 1: "NOT ALL", 2: "NOT ANY", 3: "AND ALL"}
# SillyTavern's world_info_position, by the name a template's variable gets (lorebooks/producers.py).
POSITIONS = {0: "Before", 1: "After", 2: "ANTop", 3: "ANBottom", 4: "AtDepth", 5: "EMTop", 6: "EMBottom"}
AT_DEPTH = 4
TIMED = ("sticky", "cooldown")


@dataclass(frozen=True)
class Candidate:
    book: str
    uid: str
    view: dict  # World Info fields (lorebooks.formats.view_of)

    @property
    def key(self) -> str:
        return f"{self.book}.{self.uid}"  # the timed-effect key, as SillyTavern's `world.uid`


@dataclass(frozen=True)
class ScanSettings:
    scan_depth: int = 2
    budget: int = 4000  # characters of fired content
    recursive: bool = False
    max_recursion_steps: int = 0
    case_sensitive: bool = False
    match_whole_words: bool = False
    use_group_scoring: bool = False
    chat_length: int = 0  # messages in the chat so far, the current one included (for `delay`)
    # messages in the whole conversation so far, the current one included (the clock of sticky/cooldown)
    timed_length: int = 0
    # (book, uid) of `vectorized` entries close enough to the scanned text (the producer measures it):
    # activated from outside the key scan, as SillyTavern's vector storage does.
    external: frozenset[tuple[str, str]] = frozenset()


# {"sticky": {key: {"start", "end", "protected"}}, "cooldown": {…}}: SillyTavern's chat_metadata.timedWorldInfo
TimedState = dict[str, dict[str, dict]]


@dataclass(frozen=True)
class Fired:
    candidate: Candidate
    reason: str  # "constant" | "key" | "vector" | "sticky"
    key: str | None
    secondary: list[str]
    step: int  # 1 = the first pass; more = a recursion pass


@dataclass
class Activation:
    fired: list[Fired] = field(default_factory=list)  # insertion order
    failed_probability: list[Candidate] = field(default_factory=list)
    over_budget: list[Candidate] = field(default_factory=list)
    group_losers: list[tuple[Candidate, str]] = field(default_factory=list)  # (entry, group) it lost
    suppressed: list[tuple[Candidate, str]] = field(default_factory=list)  # (entry, "cooldown" | "delay")
    timed: TimedState = field(default_factory=lambda: {"sticky": {}, "cooldown": {}})  # after this scan
    passes: int = 0

    @property
    def text(self) -> str:
        return _join(f.candidate.view["content"] for f in self.fired)

    def by_position(self) -> dict[str, str]:
        """The fired content per position name (POSITIONS), each in insertion order."""
        return {
            name: _join(f.candidate.view["content"] for f in self.fired if f.candidate.view["position"] == number)
            for number, name in POSITIONS.items()
        }

    def at_depth(self) -> list[dict]:
        """The `position: 4` entries grouped by (depth, role), as SillyTavern injects them into the chat."""
        groups: dict[tuple[int, int], list[str]] = {}
        for f in reversed(self.fired):  # highest order first: the order SillyTavern meets the groups in
            view = f.candidate.view
            if view["position"] == AT_DEPTH and view["content"]:
                groups.setdefault((view["depth"], view["role"] or 0), []).insert(0, view["content"])
        return [{"depth": d, "role": r, "content": "\n".join(texts)} for (d, r), texts in groups.items()]


def _join(contents) -> str:
    return "\n".join(content for content in contents if content)


@lru_cache(maxsize=4096)
def parse_regex_key(key: str) -> re2._Regexp | None:
    """`/pattern/flags` as a compiled regex, or None when the key is plain text (or not a regex RE2 runs).

    A key is a product's input run against every user message: RE2 runs it in linear time, where a backtracking
    engine can spend minutes on `/(a+)+$/` (docs/security.md). Lookarounds and backreferences, which need
    backtracking, are not regexes here: such a key is matched as plain text, as an invalid one is.
    """
    match = _REGEX_KEY.match(key)
    if not match or _UNESCAPED_SLASH.search(match.group(1)):
        return None
    flags = "".join(flag for flag in "ims" if flag in match.group(2))
    pattern = (f"(?{flags})" if flags else "") + _JS_NAMED_GROUP.sub("(?P<", match.group(1))
    try:
        regex = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error:
        return None
    return regex if regex.programsize <= MAX_PROGRAM_SIZE else None


def key_matches(haystack: str, key: str, view: dict, settings: ScanSettings) -> bool:
    regex = parse_regex_key(key)
    if regex is not None:
        return regex.search(haystack) is not None
    case_sensitive = settings.case_sensitive if view["caseSensitive"] is None else view["caseSensitive"]
    if not case_sensitive:
        haystack, key = haystack.lower(), key.lower()
    whole = settings.match_whole_words if view["matchWholeWords"] is None else view["matchWholeWords"]
    if not whole or len(key.split()) > 1:
        return key in haystack
    return re.search(rf"(?:^|\W)({re.escape(key)})(?:$|\W)", haystack, re.ASCII) is not None


def _unit(seed: str, *parts: str) -> float:
    """A number in [0, 1) from the seed and the parts: the deterministic stand-in for Math.random()."""
    digest = hashlib.sha256("\x00".join((seed, *parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _roll(seed: str, candidate: Candidate) -> float:
    return _unit(seed, candidate.book, candidate.uid) * 100


def groups_of(view: dict) -> list[str]:
    return [name for name in _GROUP_SEPARATOR.split(view["group"] or "") if name]


def check_timed(state: TimedState | None, candidates: list[Candidate], length: int) -> TimedState:
    """The effects still running at chat length `length`; an ended sticky effect starts its cooldown."""
    known = {c.key: c for c in candidates}
    before = state or {}
    out: TimedState = {kind: {} for kind in TIMED}
    for kind in TIMED:
        for key, effect in sorted((before.get(kind) or {}).items()):
            if not isinstance(effect, dict):
                continue
            entry = known.get(key)
            ended = length >= effect["end"]
            if length <= effect["start"] and not effect.get("protected"):
                continue  # the chat did not advance since it was set (SillyTavern drops it)
            if entry is None:
                if not ended:
                    out[kind][key] = effect  # an entry of a book not scanned now, kept until its end
                continue
            if not entry.view[kind]:
                continue
            if ended:
                if kind == "sticky" and entry.view["cooldown"]:
                    out["cooldown"][key] = _effect(length, entry.view["cooldown"], protected=True)
                continue
            if kind == "cooldown" and key in out["cooldown"]:
                continue  # a cooldown just started by its sticky effect's end replaces the older one
            out[kind][key] = effect
    return out


def _effect(length: int, duration: int, *, protected: bool = False) -> dict:
    return {"start": length, "end": length + duration, "protected": protected}


class _Scan:
    def __init__(self, candidates: list[Candidate], messages: list[str], settings: ScanSettings, seed: str, timed):
        self.entries = sorted(candidates, key=lambda c: -c.view["order"])  # stable: ties keep book order
        self.rank = {id(entry): index for index, entry in enumerate(self.entries)}
        self.messages = [m.strip() for m in messages[:MAX_SCAN_DEPTH]]
        self.settings, self.seed = settings, seed
        self.timed = check_timed(timed, candidates, settings.timed_length)
        self.recurse: list[str] = []
        self.fired: dict[int, Fired] = {}  # id(candidate) → how it fired, in firing order
        self.failed: set[int] = set()
        self.result = Activation()

    def sticky(self, entry: Candidate) -> bool:
        return entry.key in self.timed["sticky"]

    def text(self, view: dict) -> str:
        depth = self.settings.scan_depth if view["scanDepth"] is None else view["scanDepth"]
        if depth <= 0:
            return ""
        text = "\x01" + "\n\x01".join(self.messages[: min(depth, MAX_SCAN_DEPTH)])
        if self.recurse:
            text += "\n\x01" + "\n\x01".join(self.recurse)
        return text

    def held(self, entry: Candidate, recursion: bool, level: int) -> str | None:
        """Why the entry may not fire on this pass (None: it may)."""
        view, sticky = entry.view, self.sticky(entry)
        if view["disable"]:
            return "disabled"
        if view["delay"] and self.settings.chat_length < view["delay"]:
            return "delay"
        if entry.key in self.timed["cooldown"] and not sticky:
            return "cooldown"
        delayed = view["delayUntilRecursion"]
        if delayed and not sticky and (not recursion or int(delayed) > level):
            return "delayUntilRecursion"
        if recursion and self.settings.recursive and view["excludeRecursion"] and not sticky:
            return "excludeRecursion"
        return None

    def check(self, entry: Candidate, recursion: bool, level: int, step: int) -> Fired | None:
        why = self.held(entry, recursion, level)
        if why is not None:
            if why in ("cooldown", "delay") and step == 1 and self.fires(entry, step) is not None:
                self.result.suppressed.append((entry, why))  # it would have fired: its key is there
            return None
        return self.fires(entry, step)

    def fires(self, entry: Candidate, step: int) -> Fired | None:
        """Whether the entry fires in this pass, its timed effects and recursion holds aside."""
        view = entry.view
        if view["constant"]:
            return Fired(entry, "constant", None, [], step)
        if (entry.book, entry.uid) in self.settings.external:
            return Fired(entry, "vector", None, [], step)
        if self.sticky(entry):
            return Fired(entry, "sticky", None, [], step)
        text = self.text(view)
        keys = [k.strip() for k in view["key"] if k.strip()]
        primary = next((k for k in keys if key_matches(text, k, view, self.settings)), None)
        if primary is None:
            return None
        secondary = [k for k in view["keysecondary"] if k.strip()]
        if not (view["selective"] and secondary):
            return Fired(entry, "key", primary, [], step)
        hits = [k for k in secondary if key_matches(text, k.strip(), view, self.settings)]
        return self._secondary(entry, primary, secondary, hits, step)

    @staticmethod
    def _secondary(entry: Candidate, primary: str, keys: list[str], hits: list[str], step: int) -> Fired | None:
        logic = entry.view["selectiveLogic"]
        misses = [k for k in keys if k not in hits]
        if logic == 0 and hits:
            return Fired(entry, "key", primary, hits[:1], step)
        if logic == 1 and misses:
            return Fired(entry, "key", primary, misses[:1], step)
        if logic == 2 and not hits:
            return Fired(entry, "key", primary, [], step)
        if logic == 3 and not misses:
            return Fired(entry, "key", primary, hits, step)
        return None

    def score(self, entry: Candidate) -> int:
        """Keys found in the scanned text (SillyTavern's getScore): primary ones, plus the secondary ones
        under AND ANY, or under AND ALL when all of them are found."""
        view, text = entry.view, self.text(entry.view)
        primary = [k for k in view["key"] if k.strip()]
        if not primary:
            return 0
        found = sum(key_matches(text, k.strip(), view, self.settings) for k in primary)
        secondary = [k for k in view["keysecondary"] if k.strip()]
        hits = sum(key_matches(text, k.strip(), view, self.settings) for k in secondary)
        logic = view["selectiveLogic"]
        if secondary and (logic == 0 or (logic == 3 and hits == len(secondary))):
            return found + hits
        return found

    def narrow_by_groups(self, found: list[Fired]) -> list[Fired]:
        """One entry per inclusion group (SillyTavern's filterByInclusionGroups), deterministic by the seed."""
        groups: dict[str, list[Fired]] = {}
        for hit in found:
            for name in groups_of(hit.candidate.view):
                groups.setdefault(name, []).append(hit)
        if not groups:
            return found
        lost: dict[int, str] = {}

        def drop(members: list[Fired], keep: Fired | None, group: str) -> None:
            for member in members:
                if member is not keep:
                    lost.setdefault(id(member.candidate), group)

        fired_groups = {name for f in self.fired.values() for name in groups_of(f.candidate.view)}
        for name, members in groups.items():
            sticky = [m for m in members if self.sticky(m.candidate)]
            if sticky:
                drop([m for m in members if m not in sticky], None, name)
                continue
            members = self._best_scored(members, name, drop)
            if name in fired_groups:
                drop(members, None, name)  # the group already has its entry from an earlier pass
            elif len(members) > 1:
                drop(members, self._winner(name, members), name)
        self.result.group_losers.extend((h.candidate, lost[id(h.candidate)]) for h in found if id(h.candidate) in lost)
        return [hit for hit in found if id(hit.candidate) not in lost]

    def _best_scored(self, members: list[Fired], name: str, drop) -> list[Fired]:
        def scored(hit: Fired) -> bool:
            own = hit.candidate.view["useGroupScoring"]
            return self.settings.use_group_scoring if own is None else own

        if not any(scored(m) for m in members) and not self.settings.use_group_scoring:
            return members
        scores = {id(m): self.score(m.candidate) for m in members}
        best = max(scores.values())
        losers = [m for m in members if scored(m) and scores[id(m)] < best]
        drop(losers, None, name)
        return [m for m in members if m not in losers]

    def _winner(self, name: str, members: list[Fired]) -> Fired:
        overriding = [m for m in members if m.candidate.view["groupOverride"]]
        if overriding:
            return sorted(overriding, key=lambda m: -m.candidate.view["order"])[0]
        weights = [max(0.0, float(m.candidate.view["groupWeight"])) for m in members]
        roll = _unit(self.seed, "group", name) * sum(weights)
        total = 0.0
        for member, weight in zip(members, weights, strict=True):
            total += weight
            if roll <= total:
                return member
        return members[-1]

    def passing(self, found: list[Fired]) -> list[Fired]:
        """Sticky entries first, then by priority (SillyTavern's order for groups, probability and budget)."""
        return sorted(found, key=lambda h: (not self.sticky(h.candidate), self.rank[id(h.candidate)]))

    def run(self) -> Activation:
        levels = sorted({int(e.view["delayUntilRecursion"]) for e in self.entries if e.view["delayUntilRecursion"]})
        level = levels.pop(0) if levels else 0
        recursion, overflowed, fired_chars = False, False, 0
        steps = self.settings.max_recursion_steps
        while True:
            if steps and self.result.passes >= steps:
                break
            self.result.passes += 1
            found = [
                hit
                for entry in self.entries
                if id(entry) not in self.fired and id(entry) not in self.failed
                if (hit := self.check(entry, recursion, level, self.result.passes)) is not None
            ]
            found = self.narrow_by_groups(self.passing(found))
            added, new_chars = [], 0
            for index, hit in enumerate(found):
                view = hit.candidate.view
                rolled = view["useProbability"] and view["probability"] < 100 and not self.sticky(hit.candidate)
                if rolled and _roll(self.seed, hit.candidate) > view["probability"]:
                    self.failed.add(id(hit.candidate))
                    self.result.failed_probability.append(hit.candidate)
                    continue
                new_chars += len(view["content"])  # the content only: the line breaks that join entries are free
                if fired_chars + new_chars >= self.settings.budget:
                    overflowed = True
                    self.result.over_budget.extend(h.candidate for h in found[index:])
                    break
                self.fired[id(hit.candidate)] = hit
                added.append(hit)
            fired_chars += new_chars
            for_recursion = [h.candidate.view["content"] for h in added if not h.candidate.view["preventRecursion"]]
            more = self.settings.recursive and not overflowed and bool(for_recursion)
            if not more and not overflowed and levels:
                more, level = True, levels.pop(0)
            if not more:
                break
            recursion = True
            self.recurse.append("\n".join(for_recursion))
        # SillyTavern: the fired entries sorted by order descending (ties in firing order), then reversed.
        by_priority = sorted(self.fired.values(), key=lambda f: -f.candidate.view["order"])
        self.result.fired = list(reversed(by_priority))
        self.result.timed = self._timed_after()
        return self.result

    def _timed_after(self) -> TimedState:
        """Every entry that fired starts its sticky and cooldown effects, unless one of that kind runs."""
        out = {kind: dict(self.timed[kind]) for kind in TIMED}
        length = self.settings.timed_length
        for f in self.fired.values():
            for kind in TIMED:
                duration = f.candidate.view[kind]
                if duration and f.candidate.key not in out[kind]:
                    out[kind][f.candidate.key] = _effect(length, duration)
        return out


def activate(
    candidates: list[Candidate],
    messages: list[str],
    settings: ScanSettings,
    *,
    seed: str,
    timed: TimedState | None = None,
) -> Activation:
    """`messages`: newest first (the current user message at index 0); `timed`: the state after the previous
    visible turn (None: no effect runs)."""
    return _Scan(candidates, messages, settings, seed, timed).run()
