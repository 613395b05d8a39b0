"""The labelled evaluation set (tests/data/admission_cases.jsonl) and the held-out targets (issue 13, item 2),
and the blind set (tests/data/admission_blind.jsonl, issue 26).

The figures come from bench/admission.py (the same code prints them): on the held-out half, false
refusals ≤ 2 % of the cases to admit and false admissions ≤ 1 % of the cases to refuse; on the blind set,
false refusals ≤ 3 %, false admissions ≤ 1 %, secrets admitted 0. The blind set is read only through
bench.evaluate_blind / bench.report_blind, which keep counts and identifiers: no assertion here may put
one of its texts in a message.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from memories.longterm.admission import REFUSAL_CODES

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_admission", ROOT / "bench" / "admission.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_admission", module)
    spec.loader.exec_module(module)
    return module


bench = _bench()
CASES = bench.load_cases()


def test_the_set_has_at_least_300_labelled_cases_in_two_halves_of_three_kinds_of_language() -> None:
    assert len(CASES) >= 300
    assert len({case["id"] for case in CASES}) == len(CASES)
    splits = Counter(case["split"] for case in CASES)
    assert set(splits) == {"dev", "heldout"} and min(splits.values()) >= 150
    for split in ("dev", "heldout"):
        half = [case for case in CASES if case["split"] == split]
        assert {case["lang"] for case in half} == {"en", "zh", "mixed"}
        outcomes = Counter(case["expect"] == "admit" for case in half)
        assert outcomes[True] >= 50 and outcomes[False] >= 50, (split, outcomes)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_every_case_is_well_formed(case: dict) -> None:
    assert isinstance(case["evidence"], str) and case["evidence"]
    assert case["expect"] == "admit" or case["expect"] in REFUSAL_CODES
    if case["expect"] == "admit":
        assert isinstance(case["claims"], dict) and case["claims"]


def test_held_out_figures_meet_the_targets() -> None:
    results = bench.evaluate(CASES)
    heldout = results["heldout"]
    report = bench.report(heldout, show=True)
    assert heldout.false_refusal_rate <= bench.TARGET_FALSE_REFUSALS, report
    assert heldout.false_admission_rate <= bench.TARGET_FALSE_ADMISSIONS, report
    assert not heldout.wrong_claims, report


def test_the_development_half_meets_the_targets_too() -> None:
    dev = bench.evaluate(CASES)["dev"]
    assert dev.meets_targets, bench.report(dev, show=True)


VARIANTS = bench.load_cases(bench.VARIANTS)


def test_the_synthetic_variants_cover_every_kind_of_writing_and_near_misses() -> None:
    # Written to measure the claim readers (bench/admission_embedder.py): typos, synonyms, compounds,
    # full-width forms and mixed EN/ZH to admit; another value, another field, nothing stated, a negation
    # and real words next to a claim word to refuse.
    assert len({case["id"] for case in VARIANTS}) == len(VARIANTS) >= 100
    kinds = Counter((case["variant"], case["expect"] == "admit") for case in VARIANTS)
    for kind in ("typo", "synonym", "compound", "fullwidth", "mixed"):
        assert kinds[(kind, True)] >= 5, kind
    for kind in ("opposite", "other-field", "unstated", "negated", "near-miss"):
        assert kinds[(kind, False)] >= 5, kind
    assert {case["lang"] for case in VARIANTS} == {"en", "zh", "mixed"}


def test_the_synthetic_variants_meet_the_development_targets() -> None:
    variants = bench.evaluate(VARIANTS)["variants"]
    assert variants.meets_targets and not variants.wrong_claims, bench.report(variants, show=True)


def test_the_bench_prints_both_halves(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench/admission.py"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    for expected in ("dev:", "heldout:", "variants:", "blind:", "false refusals:", "false admissions:", "confusion"):
        assert expected in out


BLIND = bench.load_cases(bench.BLIND)


def test_the_blind_set_has_at_least_300_cases_of_every_reason_and_language() -> None:
    # Counted through the same fields the bench reads; no text is looked at or printed.
    assert len(BLIND) >= 300 and len({case["id"] for case in BLIND}) == len(BLIND)
    assert {case["lang"] for case in BLIND} == {"en", "zh", "mixed"}
    reasons = Counter(case.get("reason") for case in BLIND if case["expect"] == "refuse")
    assert set(reasons) == {
        "hedge",
        "one_off",
        "question",
        "negation",
        "other_person",
        "past",
        "hypothetical",
        "temporary",
        "no_statement",
        "secret",
    }
    assert Counter(case["expect"] for case in BLIND)["admit"] >= 100


def test_every_blind_secret_is_refused_as_a_secret() -> None:
    blind = bench.evaluate_blind(BLIND)
    report = bench.report_blind(blind)  # counts and identifiers only
    assert blind.secrets >= 20 and not blind.secrets_admitted and not blind.secrets_other_code, report


# Met since 2026-12-03 (false refusals 5/198 = 2.53 %, false admissions 1/149 = 0.67 %; docs/admission-reasons.md).
def test_blind_false_refusals_and_admissions_meet_the_targets() -> None:
    blind = bench.evaluate_blind(BLIND)
    report = bench.report_blind(blind)  # counts and identifiers only
    assert blind.false_refusal_rate <= bench.BLIND_TARGET_FALSE_REFUSALS, report
    assert blind.false_admission_rate <= bench.BLIND_TARGET_FALSE_ADMISSIONS, report


def test_the_blind_report_prints_no_text_of_the_set(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench/admission.py", "--blind"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "blind:" in out and "false refusal ids:" in out and "confusion (expected reason" in out
    leaked = [case["id"] for case in BLIND if len(case["evidence"]) >= 8 and case["evidence"] in out]
    assert leaked == [], "the blind report printed texts of cases: " + " ".join(leaked)
