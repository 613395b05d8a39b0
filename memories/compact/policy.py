"""The scenario section "compact": how much history a turn's input may hold, and when it is summarised."""

from __future__ import annotations

from dataclasses import dataclass

from memoryhub.runtimes.registry import SectionInvalid

SECTION = "compact"
DEFAULTS = {"budgetChars": 12000, "keepRecentMessages": 8, "checkpointEveryRounds": 0}
# (minimum, maximum) of each field; budgetChars leaves room for the shortest summary and a message.
LIMITS = {"budgetChars": (500, 1_000_000), "keepRecentMessages": (0, 500), "checkpointEveryRounds": (0, 100_000)}
TRIGGER_PERCENT = 80  # a commit schedules a compaction once the history passes this share of the budget
SUMMARY_SHARE = 4  # a summary is at most budgetChars / 4 characters


@dataclass(frozen=True)
class CompactPolicy:
    budget_chars: int = DEFAULTS["budgetChars"]
    keep_recent_messages: int = DEFAULTS["keepRecentMessages"]
    checkpoint_every_rounds: int = DEFAULTS["checkpointEveryRounds"]

    @property
    def trigger_chars(self) -> int:
        """History longer than this schedules a compaction after the commit."""
        return self.budget_chars * TRIGGER_PERCENT // 100

    @property
    def summary_max_chars(self) -> int:
        return self.budget_chars // SUMMARY_SHARE

    def is_checkpoint(self, round_number: int) -> bool:
        every = self.checkpoint_every_rounds
        return every > 0 and round_number > 0 and round_number % every == 0


def parse_compact_section(value: object) -> CompactPolicy:
    """The section (absent: the defaults) as a policy, or SectionInvalid naming each failing field."""
    if value is None:
        return CompactPolicy()
    if not isinstance(value, dict):
        raise SectionInvalid({SECTION: "must be an object with budgetChars, keepRecentMessages, checkpointEveryRounds"})
    errors = {f"{SECTION}.{key}": "unknown field" for key in sorted(set(value) - set(DEFAULTS))}
    merged = {**DEFAULTS, **{k: v for k, v in value.items() if k in DEFAULTS}}
    for key, (low, high) in LIMITS.items():
        number = merged[key]
        if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
            errors[f"{SECTION}.{key}"] = f"must be an integer from {low} to {high}"
    if errors:
        raise SectionInvalid(errors)
    return CompactPolicy(merged["budgetChars"], merged["keepRecentMessages"], merged["checkpointEveryRounds"])


def policy_to_dict(policy: CompactPolicy) -> dict:
    return {
        "budgetChars": policy.budget_chars,
        "keepRecentMessages": policy.keep_recent_messages,
        "checkpointEveryRounds": policy.checkpoint_every_rounds,
    }


def validate_compact_section(value: object) -> dict:
    """The registered validator: the normalized section (defaults filled in)."""
    return policy_to_dict(parse_compact_section(value))


def scenario_policy(scenario: object) -> CompactPolicy:
    """The policy of a stored scenario (its section was validated when it was saved)."""
    sections = getattr(scenario, "sections", None) or {}
    return parse_compact_section(sections.get(SECTION))
