"""The labelled evaluation set (tests/data/admission_cases.jsonl) and the held-out targets (issue 13, item 2).

The figures come from bench/admission.py (the same code prints them): on the held-out half, false
refusals ≤ 2 % of the cases to admit and false admissions ≤ 1 % of the cases to refuse.
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


def test_the_bench_prints_both_halves(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench/admission.py"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    for expected in ("dev:", "heldout:", "false refusals:", "false admissions:", "confusion"):
        assert expected in out
