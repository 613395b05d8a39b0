"""Signals of the core app that other apps listen to (e.g. the history index, memories.history)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent inside the transaction that stored a round's messages (bulk_create sends no post_save):
# `messages` is the list of the new memories.Message rows, with their primary keys.
messages_stored = Signal()
