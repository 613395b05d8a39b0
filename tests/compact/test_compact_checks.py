"""The checks before a compaction is kept: the range must still be the live messages it summarised."""

from __future__ import annotations

import pytest

from memories.compact import services
from memories.compact.policy import CompactPolicy
from memories.compact.services import compaction_run
from memories.models import Message
from memoryhub.addresses import ConversationAddress
from tests.support.turns import post_turn

from .support import compactions, create_scenario, events, history_source, play, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def superseding_summarizer(monkeypatch):
    """A summariser during whose work a covered message is superseded (a regeneration committing meanwhile)."""
    real = services.compaction_summarizer

    class Meanwhile:
        def __init__(self, inner):
            self.inner, self.name = inner, inner.name

        def summarize(self, messages, *args, **kwargs):
            Message.objects.filter(pk=Message.objects.order_by("id").values_list("pk", flat=True)[2]).update(
                superseded=True
            )
            return self.inner.summarize(messages, *args, **kwargs)

    monkeypatch.setattr(services, "compaction_summarizer", lambda limit: Meanwhile(real(limit)))


def _conversation(api) -> ConversationAddress:
    create_scenario(api, budget=2000, keep=2)
    for n in range(1, 11):
        play(api, text(90, f"u{n}"), text(90, f"a{n}"))
    return ConversationAddress(api.product, "u1", "c1")


def test_a_range_that_changed_while_it_was_summarised_is_not_kept(alice, superseding_summarizer) -> None:
    address = _conversation(alice)
    outcome = compaction_run(address=address, policy=CompactPolicy(2000, 2), trigger="threshold")
    assert outcome.outcome == "range_changed" and compactions(alice) == []
    [failed] = events(alice, "compact.failed")
    assert "changed while they were summarised" in failed["details"]["reason"]


def test_an_inline_compaction_that_lost_its_range_tries_again(alice, monkeypatch) -> None:
    _conversation(alice)
    real, calls = services.compaction_summarizer, []

    class FirstTimeMeanwhile:
        def __init__(self, inner):
            self.inner, self.name = inner, inner.name

        def summarize(self, messages, *args, **kwargs):
            if not calls:
                first = Message.objects.order_by("id").values_list("pk", flat=True)[2]
                Message.objects.filter(pk=first).update(superseded=True)
            calls.append(len(messages))
            return self.inner.summarize(messages, *args, **kwargs)

    monkeypatch.setattr(services, "compaction_summarizer", lambda limit: FirstTimeMeanwhile(real(limit)))
    # Even without the superseded message the input does not fit (1,989 - 96 + 150 > 2,000): compact again.
    turn = post_turn(alice, "chat", text(150, "now")).json()
    assert len(calls) == 2  # the first summary was refused by the range check, the second kept
    assert len(events(alice, "compact.failed")) == 1
    [kept] = compactions(alice)
    assert kept["messageCount"] == 17  # one message fewer: it was superseded meanwhile
    assert history_source(turn)["details"]["compaction"]["id"] == kept["id"]
    assert history_source(turn)["details"]["inputChars"] <= 2000
