"""memoryhub/rollback.py: the pure plan of undoing a superseded turn's writes and of a select's reapply."""

from __future__ import annotations

from memoryhub.rollback import REAPPLY, ROLLBACK, WRITE, Step, plan_redo, plan_undo


def test_the_turns_newest_writes_are_undone_to_the_revision_before_the_first():
    history = [Step(1, None, WRITE), Step(2, 7, WRITE), Step(3, 7, WRITE)]
    plan = plan_undo(history, 7, current=3)
    assert (plan.status, plan.restore, plan.revisions) == ("apply", 1, (2, 3))


def test_a_write_by_someone_else_after_the_turn_is_a_conflict():
    history = [Step(1, None, WRITE), Step(2, 7, WRITE), Step(3, None, WRITE)]
    plan = plan_undo(history, 7, current=3)
    assert plan.status == "conflict" and "revision 3" in plan.reason


def test_another_turns_write_between_the_turns_writes_is_a_conflict():
    history = [Step(1, 7, WRITE), Step(2, 8, WRITE), Step(3, 7, WRITE)]
    assert plan_undo(history, 7, current=3).status == "conflict"


def test_a_turn_without_writes_or_already_undone_has_nothing_to_undo():
    history = [Step(1, None, WRITE), Step(2, 7, WRITE), Step(3, 7, ROLLBACK)]
    assert plan_undo(history, 7, current=3).status == "nothing"
    assert plan_undo(history, 9, current=3).status == "nothing"


def test_a_reapplied_turn_is_undone_back_to_before_the_reapply():
    history = [Step(1, None, WRITE), Step(2, 7, WRITE), Step(3, 7, ROLLBACK), Step(4, 8, WRITE)]
    history += [Step(5, 8, ROLLBACK), Step(6, 7, REAPPLY)]
    plan = plan_undo(history, 7, current=6)
    assert (plan.status, plan.restore, plan.revisions) == ("apply", 5, (6,))


def test_a_redo_restores_the_content_before_the_turns_rollback():
    history = [Step(1, None, WRITE), Step(2, 7, WRITE), Step(3, 7, ROLLBACK), Step(4, 8, WRITE), Step(5, 8, ROLLBACK)]
    plan = plan_redo(history, 7, current=5)
    assert (plan.status, plan.restore, plan.revisions) == ("apply", 2, (3,))
    assert plan_redo(history[:2], 7, current=2).status == "nothing"  # never rolled back: nothing to write again
