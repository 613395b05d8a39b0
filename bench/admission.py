"""Admission rules against the labelled evaluation set: false refusals and false admissions per half.

    .venv/bin/python bench/admission.py [--split dev|heldout|all] [--show] [--blind]

Reads tests/data/admission_cases.jsonl (one proposal per line: evidence, optional source and consent,
the claimed content, the expected outcome "admit" or a refusal code, the expected normalised claims).
Runs the offline rules only (no judge) and prints, for each half: false refusals (expected admit,
refused) over the cases to admit, false admissions (expected a refusal, admitted — or admitted with
other claims than expected) over the cases to refuse, and refusals with another code than expected.
`--show` lists every miss. The synthetic variants of tests/data/admission_variants.jsonl (typos, synonyms,
compounds, full-width forms, mixed EN/ZH, and near misses; written to measure the claim readers, see
bench/admission_embedder.py) are a third, development-only section with the development targets.
Targets on the held-out half: false refusals ≤ 2 %, false admissions ≤ 1 %;
tests/longterm/test_admission_eval.py fails when they are not met.

The blind set (tests/data/admission_blind.jsonl, written by someone who never saw the rules, committed
before the rules changed) is scored in every run, and alone with `--blind`. Its rule author must never
read it, so this script prints only counts (by label, reason and language), the confusion of expected
reason against the refusal's `details.reason`, and the identifiers of failures — never a text.
Targets on the blind set: false refusals ≤ 3 %, false admissions ≤ 1 %, secrets admitted 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memories.longterm.admission import admit  # noqa: E402

CASES = ROOT / "tests" / "data" / "admission_cases.jsonl"
BLIND = ROOT / "tests" / "data" / "admission_blind.jsonl"
VARIANTS = ROOT / "tests" / "data" / "admission_variants.jsonl"
TARGET_FALSE_REFUSALS = 0.02
TARGET_FALSE_ADMISSIONS = 0.01
BLIND_TARGET_FALSE_REFUSALS = 0.03
BLIND_TARGET_FALSE_ADMISSIONS = 0.01
SPLITS = ("dev", "heldout")


@dataclass
class HalfResult:
    split: str
    cases: int = 0
    to_admit: int = 0
    to_refuse: int = 0
    false_refusals: list[str] = field(default_factory=list)
    false_admissions: list[str] = field(default_factory=list)
    wrong_claims: list[str] = field(default_factory=list)
    wrong_code: list[str] = field(default_factory=list)
    confusion: Counter = field(default_factory=Counter)  # (expected, got) -> n
    reasons: Counter = field(default_factory=Counter)  # (expected reason, got details.reason) of labelled refusals

    @property
    def false_refusal_rate(self) -> float:
        return len(self.false_refusals) / self.to_admit if self.to_admit else 0.0

    @property
    def false_admission_rate(self) -> float:
        return (len(self.false_admissions) + len(self.wrong_claims)) / self.to_refuse if self.to_refuse else 0.0

    @property
    def meets_targets(self) -> bool:
        return self.false_refusal_rate <= TARGET_FALSE_REFUSALS and self.false_admission_rate <= TARGET_FALSE_ADMISSIONS


def load_cases(path: Path = CASES) -> list[dict]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def run_case(case: dict):
    evidence = case["evidence"]
    return admit(
        case.get("kind", "preference"),
        consent=case.get("consent", True),
        source=case.get("source", evidence),
        evidence=evidence,
        content=case["content"],
        judge=None,  # the rules alone: offline and deterministic
    )


def evaluate(cases: list[dict]) -> dict[str, HalfResult]:
    results = {split: HalfResult(split) for split in SPLITS}
    for case in cases:
        half = results.setdefault(case["split"], HalfResult(case["split"]))
        half.cases += 1
        expected = case["expect"]
        result = run_case(case)
        got = "admit" if result.ok else result.code
        half.confusion[(expected, got)] += 1
        miss = f"{case['id']}: {case['evidence']!r} {case['content']} expected {expected}, got {got}"
        if expected == "admit":
            half.to_admit += 1
            if not result.ok:
                half.false_refusals.append(f"{miss} ({result.reason})")
            elif result.normalized_content != case["claims"]:
                half.wrong_claims.append(f"{miss} with claims {result.normalized_content}")
        else:
            half.to_refuse += 1
            if case.get("reason"):
                half.reasons[(case["reason"], details_reason(result))] += 1
            if result.ok:
                half.false_admissions.append(miss)
            elif got != expected:
                half.wrong_code.append(f"{miss} ({result.reason})")
    return results


def _percent(part: int, whole: int) -> str:
    return f"{part}/{whole} = {100 * part / whole:.2f} %" if whole else "0/0"  # 2 decimals: 6/198 is 3.03 %, not 3


def report(half: HalfResult, show: bool) -> str:
    lines = [
        f"{half.split}: {half.cases} cases ({half.to_admit} to admit, {half.to_refuse} to refuse)",
        f"  false refusals:   {_percent(len(half.false_refusals), half.to_admit)}"
        f"   (target ≤ {TARGET_FALSE_REFUSALS:.0%})",
        f"  false admissions: {_percent(len(half.false_admissions) + len(half.wrong_claims), half.to_refuse)}"
        f"   (target ≤ {TARGET_FALSE_ADMISSIONS:.0%}; {len(half.wrong_claims)} with wrong claims)",
        f"  refused with another code: {len(half.wrong_code)}",
        "  confusion (expected → got): "
        + ", ".join(f"{e} → {g}: {n}" for (e, g), n in sorted(half.confusion.items(), key=lambda kv: -kv[1])),
    ]
    if half.reasons:
        agreed = sum(n for (e, g), n in half.reasons.items() if e == g)
        lines.append(f"  refusals with the expected details.reason: {agreed}/{sum(half.reasons.values())}")
    if show:
        if half.reasons:
            lines.append(
                "  reasons (expected → details.reason): "
                + ", ".join(f"{e} → {g}: {n}" for (e, g), n in sorted(half.reasons.items()))
            )
        for title, misses in (
            ("false refusals", half.false_refusals),
            ("false admissions", half.false_admissions),
            ("wrong claims", half.wrong_claims),
            ("another code", half.wrong_code),
        ):
            lines += [f"  {title}:"] + [f"    {miss}" for miss in misses] if misses else []
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The blind set: counts and identifiers only, never a text (its rule author must not read it)
# ---------------------------------------------------------------------------------------------


@dataclass
class BlindResult:
    cases: int = 0
    to_admit: int = 0
    to_refuse: int = 0
    false_refusals: list[str] = field(default_factory=list)  # identifiers only
    false_admissions: list[str] = field(default_factory=list)
    secrets: int = 0
    secrets_admitted: list[str] = field(default_factory=list)
    secrets_other_code: list[str] = field(default_factory=list)
    by_label: Counter = field(default_factory=Counter)  # (expect, reason or "-") -> n
    by_lang: Counter = field(default_factory=Counter)  # (lang, expect, "ok" | "miss") -> n
    confusion: Counter = field(default_factory=Counter)  # (expected reason, got details.reason) -> n

    @property
    def false_refusal_rate(self) -> float:
        return len(self.false_refusals) / self.to_admit if self.to_admit else 0.0

    @property
    def false_admission_rate(self) -> float:
        return len(self.false_admissions) / self.to_refuse if self.to_refuse else 0.0

    @property
    def meets_targets(self) -> bool:
        return (
            self.false_refusal_rate <= BLIND_TARGET_FALSE_REFUSALS
            and self.false_admission_rate <= BLIND_TARGET_FALSE_ADMISSIONS
            and not self.secrets_admitted
            and not self.secrets_other_code
        )


def details_reason(result) -> str:
    """What the API puts in `details.reason` for this verdict ("admit" when admitted)."""
    if result.ok:
        return "admit"
    return getattr(result, "cause", None) or result.code


def evaluate_blind(cases: list[dict]) -> BlindResult:
    out = BlindResult()
    for case in cases:
        out.cases += 1
        expected, reason, lang = case["expect"], case.get("reason") or "-", case.get("lang", "?")
        result = run_case(case)
        got = details_reason(result)
        out.by_label[(expected, reason)] += 1
        if expected == "admit":
            out.to_admit += 1
            out.confusion[("admit", got)] += 1
            missed = not result.ok
            if missed:
                out.false_refusals.append(case["id"])
        else:
            out.to_refuse += 1
            out.confusion[(reason, got)] += 1
            missed = result.ok
            if missed:
                out.false_admissions.append(case["id"])
            if reason == "secret":
                out.secrets += 1
                if result.ok:
                    out.secrets_admitted.append(case["id"])
                elif result.code != "secret_detected":
                    out.secrets_other_code.append(case["id"])
        out.by_lang[(lang, expected, "miss" if missed else "ok")] += 1
    return out


def report_blind(blind: BlindResult) -> str:
    """Counts and identifiers: no evidence, source or content is ever printed."""
    langs = sorted({lang for lang, _, _ in blind.by_lang})
    lines = [
        f"blind: {blind.cases} cases ({blind.to_admit} to admit, {blind.to_refuse} to refuse)",
        f"  false refusals:   {_percent(len(blind.false_refusals), blind.to_admit)}"
        f"   (target ≤ {BLIND_TARGET_FALSE_REFUSALS:.0%})",
        f"  false admissions: {_percent(len(blind.false_admissions), blind.to_refuse)}"
        f"   (target ≤ {BLIND_TARGET_FALSE_ADMISSIONS:.0%})",
        f"  secrets admitted: {len(blind.secrets_admitted)}/{blind.secrets}"
        f"   (target 0; refused with another code than secret_detected: {len(blind.secrets_other_code)})",
        "  by label: " + ", ".join(f"{e}/{r}: {n}" for (e, r), n in sorted(blind.by_label.items())),
        "  by language (ok/miss): "
        + ", ".join(
            f"{lang} {expect}: {blind.by_lang[(lang, expect, 'ok')]}/{blind.by_lang[(lang, expect, 'miss')]}"
            for lang in langs
            for expect in ("admit", "refuse")
        ),
        "  confusion (expected reason → details.reason): "
        + ", ".join(f"{e} → {g}: {n}" for (e, g), n in sorted(blind.confusion.items())),
        "  false refusal ids: " + (" ".join(blind.false_refusals) or "none"),
        "  false admission ids: " + (" ".join(blind.false_admissions) or "none"),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=(*SPLITS, "variants", "all"), default="all")
    parser.add_argument("--show", action="store_true", help="list every miss of the labelled set (never the blind one)")
    parser.add_argument("--blind", action="store_true", help="score the blind set only (counts and identifiers)")
    args = parser.parse_args()
    if not args.blind:
        results = evaluate(load_cases() + load_cases(VARIANTS))
        for split in (*SPLITS, "variants") if args.split == "all" else (args.split,):
            print(report(results[split], args.show))
    print(report_blind(evaluate_blind(load_cases(BLIND))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
