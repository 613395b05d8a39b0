"""memoryhub.faults: off unless the suite switches it on; then its points run the registered handlers."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryhub import faults

POINT = faults.TABLE_EDITS_BETWEEN_READ_AND_WRITE


def test_off_by_default_nothing_can_be_registered_and_points_do_nothing(settings):
    assert settings.FAULT_INJECTION is False and faults.enabled() is False
    with pytest.raises(ImproperlyConfigured, match="MEMORYHUB_FAULT_INJECTION"):
        faults.register(POINT, lambda *args: None)
    faults.point(POINT, "turn", 1)  # no handler, no error


def test_a_point_runs_its_handlers_in_order_and_only_while_on(fault_injection, settings):
    calls = []
    fault_injection.register(POINT, lambda *args: calls.append(("first", args)))
    fault_injection.register(POINT, lambda *args: calls.append(("second", args)))
    fault_injection.point(POINT, "turn", 2)
    fault_injection.point("another.point", "turn", 3)
    assert calls == [("first", ("turn", 2)), ("second", ("turn", 2))]
    settings.FAULT_INJECTION = False
    fault_injection.point(POINT, "turn", 4)
    assert len(calls) == 2


@pytest.mark.django_db
def test_crash_after_commit_is_scheduled_only_for_listed_ids_while_on(settings, django_capture_on_commit_callbacks):
    settings.FAULT_CRASH_AFTER_COMMIT = ["op-1"]
    with django_capture_on_commit_callbacks(execute=False) as off:
        faults.crash_after_commit("op-1")
    settings.FAULT_INJECTION = True
    with django_capture_on_commit_callbacks(execute=False) as other:
        faults.crash_after_commit("op-2")
    with django_capture_on_commit_callbacks(execute=False) as listed:
        faults.crash_after_commit("op-1")  # scheduled, never executed here: it would SIGKILL the test run
    assert (len(off), len(other), len(listed)) == (0, 0, 1)
