"""Does the bundled embedder help read claims? Three readers of `language` / `detail`, measured end to end.

    .venv/bin/python bench/admission_embedder.py [--threshold 0.80] [--margin 0.05] [--sweep] [--show] [--raw]

Readers (each runs the whole admission, so a claim read is still checked for negation, scope, …):

- lexicon:   the rules' words only (the edit-distance folding of lexicon.py switched off);
- +edit:     the rules as shipped (lexicon + edit distance + pinyin homophones);
- +embedder: as +edit, and when the quote mentions no claimed value at all (refusal cause `not_stated`),
             multilingual-e5-small (memoryhub/clients/e5, centred vectors) compares the quote and each of
             its clauses with a few prototypes of every value ("answer in English", "用中文回答", "keep it
             short", "详细一点", …); the claimed value counts as mentioned, in its best clause, when its best
             similarity is ≥ threshold and beats every other value of the field by ≥ margin.

Sets (never the blind one): tests/data/admission_cases.jsonl (dev, heldout) and the synthetic variants of
tests/data/admission_variants.jsonl (typos, synonyms, compounds, full-width, mixed EN/ZH, and quotes that
state another value, another field, nothing, or the value negated). An admission is a positive: precision =
right admissions / admissions, recall = right admissions / cases to admit. Also printed: the embedder's
calls (only on `not_stated` refusals) and their time. The measurement is recorded in
docs/long-term-memories.md ("Reading claims: the embedder, measured").
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.admission import CASES, VARIANTS, load_cases, run_case  # noqa: E402
from memories.longterm.admission import lexicon, preference  # noqa: E402
from memories.longterm.admission import statements as st  # noqa: E402

PROTOTYPES: dict[str, dict[str, list[str]]] = {
    "language": {
        "en": ["answer in English", "reply to me in English", "用英文回答", "请用英语回复我"],
        "zh": ["answer in Chinese", "reply to me in Mandarin", "用中文回答", "请用汉语回复我"],
        "ja": ["answer in Japanese", "用日语回答"],
        "fr": ["answer in French", "用法语回答"],
        "es": ["answer in Spanish", "用西班牙语回答"],
        "de": ["answer in German", "用德语回答"],
    },
    "detail": {
        "brief": ["keep it short", "brief, concise answers", "简短一点", "回答简洁些"],
        "detailed": ["explain in detail", "thorough, in-depth answers", "详细一点", "回答详细些，讲透彻"],
        "normal": ["answers of normal length", "medium-length answers", "回答长度适中", "正常长度的回答"],
    },
}


class EmbedderReader:
    """Prototype similarity over the quote and its clauses; vectors cached per text."""

    def __init__(self, threshold: float, margin: float, *, raw: bool = False) -> None:
        from memoryhub.clients import e5

        self._e5 = e5
        self.raw = raw  # e5's own vectors instead of the service's centred ones
        self.threshold, self.margin = threshold, margin
        self.cache: dict[str, np.ndarray] = {}
        self.calls = 0
        self.seconds = 0.0
        texts = [t for field in PROTOTYPES.values() for ts in field.values() for t in ts]
        self._vectors(texts)  # prototype vectors: computed once

    def _vectors(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            encode = self._e5.raw_vectors if self.raw else self._e5.centred
            for text, vector in zip(missing, encode(missing, query=True), strict=True):
                self.cache[text] = vector
        return np.stack([self.cache[t] for t in texts])

    def scores(self, reading: st.Reading, field: str) -> tuple[list[int], dict[str, np.ndarray]]:
        units = [reading.text] + [reading.clause_text(i) for i in range(len(reading.spans))]
        started = time.perf_counter()
        vectors = self._vectors(units)
        self.calls += 1
        self.seconds += time.perf_counter() - started
        clauses = [-1, *range(len(reading.spans))]
        by_value = {value: (vectors @ self._vectors(texts).T).max(axis=1) for value, texts in PROTOTYPES[field].items()}
        return clauses, by_value

    def clause(self, reading: st.Reading, field: str, value: str) -> int | None:
        """The clause the embedder reads as stating `value`, or None."""
        if value not in PROTOTYPES[field]:
            return None
        clauses, by_value = self.scores(reading, field)
        mine = by_value[value]
        best = int(mine.argmax())
        others = max((float(s[best]) for v, s in by_value.items() if v != value), default=0.0)
        if mine[best] < self.threshold or mine[best] - others < self.margin:
            return None
        return max(clauses[best], 0)


@contextmanager
def reader(name: str, embedder: EmbedderReader | None = None):
    """Switch the admission's claim reading to `name` for the duration."""
    saved = lexicon.correct, preference._language_mentions, preference._detail_mentions
    if name == "lexicon":
        lexicon.correct = lambda text: text  # type: ignore[assignment]
    if name == "+embedder":
        assert embedder is not None
        language_mentions, detail_mentions = saved[1], saved[2]

        def _fallback_mention(reading: st.Reading, field_name: str, value: str) -> list[st.Mention]:
            clause = embedder.clause(reading, field_name, value)
            if clause is None:
                return []
            start, end = reading.spans[clause]
            return [st.Mention(clause, start, end, False, "embedder")]

        def _language(reading: st.Reading, code: str) -> list[st.Mention]:
            return language_mentions(reading, code) or _fallback_mention(reading, "language", code)

        def _detail(reading: st.Reading) -> dict[str, list[st.Mention]]:
            found = detail_mentions(reading)
            claimed = _CLAIMED.get("detail")
            if claimed and not any(found.values()):  # nothing at all read: the cheap readers are undecided
                found[claimed] = _fallback_mention(reading, "detail", claimed)
            return found

        preference._language_mentions = _language  # type: ignore[assignment]
        preference._detail_mentions = _detail  # type: ignore[assignment]
    try:
        yield
    finally:
        lexicon.correct, preference._language_mentions, preference._detail_mentions = saved  # type: ignore[assignment]
        lexicon.correct_word.cache_clear()


_CLAIMED: dict[str, str] = {}


@dataclass
class Score:
    to_admit: int = 0
    admitted: int = 0
    right: int = 0
    false_admissions: list[str] = field(default_factory=list)
    false_refusals: list[str] = field(default_factory=list)

    def line(self) -> str:
        precision = self.right / self.admitted if self.admitted else 1.0
        recall = self.right / self.to_admit if self.to_admit else 1.0
        return (
            f"P {precision:6.1%}  R {recall:6.1%}  (admitted {self.admitted}, right {self.right}, "
            f"to admit {self.to_admit}; false adm {len(self.false_admissions)}, false ref {len(self.false_refusals)})"
        )


def score(cases: list[dict]) -> Score:
    out = Score()
    for case in cases:
        _CLAIMED.clear()
        with suppress(ValueError, TypeError):  # invalid content: refused before any claim is read
            _CLAIMED["detail"] = preference.normalize_preference(case["content"]).get("detail", "")
        result = run_case(case)
        expected = case["expect"] == "admit"
        right = result.ok and result.normalized_content == case.get("claims")
        out.to_admit += expected
        out.admitted += result.ok
        out.right += bool(expected and right)
        label = f"{case['id']}: {case['evidence']!r} {case['content']}"
        if result.ok and not (expected and right):
            out.false_admissions.append(label)
        if expected and not result.ok:
            out.false_refusals.append(f"{label} ({getattr(result, 'cause', None) or result.code})")
    return out


def sets() -> dict[str, list[dict]]:
    cases = load_cases(CASES)
    variants = load_cases(VARIANTS)
    return {
        "dev": [c for c in cases if c["split"] == "dev"],
        "heldout": [c for c in cases if c["split"] == "heldout"],
        "variants": variants,
    }


def run(threshold: float, margin: float, show: bool, raw: bool) -> None:
    embedder = EmbedderReader(threshold, margin, raw=raw)
    for set_name, cases in sets().items():
        print(f"{set_name}: {len(cases)} cases")
        for name in ("lexicon", "+edit", "+embedder"):
            calls_before, seconds_before = embedder.calls, embedder.seconds
            with reader(name, embedder):
                result = score(cases)
            extra = ""
            if name == "+embedder":
                calls = embedder.calls - calls_before
                spent = embedder.seconds - seconds_before
                extra = f"  [embedder calls {calls}, {1000 * spent / max(calls, 1):.0f} ms each incl. cache]"
            print(f"  {name:10s} {result.line()}{extra}")
            if show and name != "lexicon":
                for miss in result.false_admissions:
                    print(f"      false admission  {miss}")
                for miss in result.false_refusals:
                    print(f"      false refusal    {miss}")


def sweep(raw: bool) -> None:
    """Precision/recall of +embedder over thresholds, on the dev half and the variants only."""
    data = sets()
    tuning = data["dev"] + data["variants"]
    embedder = EmbedderReader(0.0, 0.0, raw=raw)
    with reader("+edit"):
        base = score(tuning)
    print(f"+edit on dev+variants: {base.line()}")
    thresholds = (0.86, 0.88, 0.90, 0.92, 0.94, 0.96) if raw else (0.35, 0.45, 0.55, 0.65, 0.75, 0.85)
    for threshold in thresholds:
        for margin in (0.0, 0.03, 0.06):
            embedder.threshold, embedder.margin = threshold, margin
            with reader("+embedder", embedder):
                result = score(tuning)
            print(f"  t={threshold:.2f} m={margin:.2f}  {result.line()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.80)
    parser.add_argument("--margin", type=float, default=0.05)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--raw", action="store_true", help="e5's own vectors, not the centred ones")
    args = parser.parse_args()
    if args.sweep:
        sweep(args.raw)
    else:
        run(args.threshold, args.margin, args.show, args.raw)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
