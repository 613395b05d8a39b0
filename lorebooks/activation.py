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
- the entries a pass found are then rolled for `probability` (when `useProbability` and below 100) with a
  seeded hash, never a clock, and added while the characters of everything fired stay under the budget:
  the first entry that would reach it stops the scan (as SillyTavern's token budget does);
- recursion runs while a pass fired something that may recurse, up to `maxRecursionSteps` passes (0: no cap);
- the text is the fired entries in insertion order: ascending `order` (highest last, nearest the prompt end).

Stored but not used here: `position`/`depth`/`role` (the scenario template decides where the variable goes;
each fired entry reports its position), inclusion `group`s, `sticky` and `cooldown` (they need per-chat
timed-effect state). A `vectorized` entry also fires, like a constant one, when the producer found its
content close to the scanned text (`ScanSettings.external`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

MAX_SCAN_DEPTH = 1000
_REGEX_KEY = re.compile(r"^/([\w\W]+?)/([gimsuy]*)$")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_JS_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")
LOGIC = {0: "AND ANY", 1: "NOT ALL", 2: "NOT ANY", 3: "AND ALL"}


@dataclass(frozen=True)
class Candidate:
    book: str
    uid: str
    view: dict  # World Info fields (lorebooks.formats.view_of)


@dataclass(frozen=True)
class ScanSettings:
    scan_depth: int = 2
    budget: int = 4000  # characters of fired content
    recursive: bool = False
    max_recursion_steps: int = 0
    case_sensitive: bool = False
    match_whole_words: bool = False
    chat_length: int = 0  # messages in the chat so far (for `delay`)
    # (book, uid) of `vectorized` entries close enough to the scanned text (the producer measures it):
    # activated from outside the key scan, as SillyTavern's vector storage does.
    external: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Fired:
    candidate: Candidate
    reason: str  # "constant" | "key"
    key: str | None
    secondary: list[str]
    step: int  # 1 = the first pass; more = a recursion pass


@dataclass
class Activation:
    fired: list[Fired] = field(default_factory=list)  # insertion order
    failed_probability: list[Candidate] = field(default_factory=list)
    over_budget: list[Candidate] = field(default_factory=list)
    passes: int = 0

    @property
    def text(self) -> str:
        return "\n".join(f.candidate.view["content"] for f in self.fired if f.candidate.view["content"])


def parse_regex_key(key: str) -> re.Pattern[str] | None:
    """`/pattern/flags` as a compiled regex, or None when the key is plain text (or not a valid regex)."""
    match = _REGEX_KEY.match(key)
    if not match or _UNESCAPED_SLASH.search(match.group(1)):
        return None
    flags = 0
    for flag, value in (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL)):
        if flag in match.group(2):
            flags |= value
    try:
        return re.compile(_JS_NAMED_GROUP.sub("(?P<", match.group(1)), flags)
    except re.error:
        return None


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


def _roll(seed: str, candidate: Candidate) -> float:
    digest = hashlib.sha256(f"{seed}\x00{candidate.book}\x00{candidate.uid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * 100


class _Scan:
    def __init__(self, candidates: list[Candidate], messages: list[str], settings: ScanSettings, seed: str):
        self.entries = sorted(candidates, key=lambda c: -c.view["order"])  # stable: ties keep book order
        self.messages = [m.strip() for m in messages[:MAX_SCAN_DEPTH]]
        self.settings, self.seed = settings, seed
        self.recurse: list[str] = []
        self.fired: dict[int, Fired] = {}  # id(candidate) → how it fired, in firing order
        self.failed: set[int] = set()
        self.result = Activation()

    def text(self, view: dict) -> str:
        depth = self.settings.scan_depth if view["scanDepth"] is None else view["scanDepth"]
        if depth <= 0:
            return ""
        text = "\x01" + "\n\x01".join(self.messages[: min(depth, MAX_SCAN_DEPTH)])
        if self.recurse:
            text += "\n\x01" + "\n\x01".join(self.recurse)
        return text

    def check(self, entry: Candidate, recursion: bool, level: int, step: int) -> Fired | None:
        view = entry.view
        if view["disable"] or (view["delay"] and self.settings.chat_length < view["delay"]):
            return None
        delayed = view["delayUntilRecursion"]
        if delayed and (not recursion or int(delayed) > level):
            return None
        if recursion and self.settings.recursive and view["excludeRecursion"]:
            return None
        if view["constant"]:
            return Fired(entry, "constant", None, [], step)
        if (entry.book, entry.uid) in self.settings.external:
            return Fired(entry, "vector", None, [], step)
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
            added, new_chars = [], 0
            for index, hit in enumerate(found):
                view = hit.candidate.view
                rolled = view["useProbability"] and view["probability"] < 100
                if rolled and _roll(self.seed, hit.candidate) > view["probability"]:
                    self.failed.add(id(hit.candidate))
                    self.result.failed_probability.append(hit.candidate)
                    continue
                new_chars += len(view["content"]) + 1
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
        return self.result


def activate(candidates: list[Candidate], messages: list[str], settings: ScanSettings, *, seed: str) -> Activation:
    """`messages`: newest first (the current user message at index 0)."""
    return _Scan(candidates, messages, settings, seed).run()
