"""Index stored messages missing from the history index, then embed every row without a current vector."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.history.services.indexing import history_backfill, unindexed_message_count
from memories.history.services.vectors import history_embed, unembedded
from memories.longterm.services.embedding_index import index_in_use
from memories.longterm.services.vectors import EmbeddingIndexMismatch


class Command(BaseCommand):
    help = "Backfill the history index: add stored messages not indexed yet, embed rows of no or another index."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--keyword-only", action="store_true", help="index messages, write no vectors")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")

    def handle(self, *args, batch_size: int, keyword_only: bool, no_progress: bool, **options) -> None:
        with tqdm(total=unindexed_message_count(), desc="index", unit="msg", disable=no_progress) as bar:
            added = history_backfill(batch_size=batch_size, progress=bar.update)
        embedded = 0
        if not keyword_only:
            try:
                in_use = index_in_use()
            except EmbeddingIndexMismatch as exc:  # the messages are indexed for keywords; vectors wait for it
                raise CommandError(f"{exc}; run it, then this command again") from exc
            pks = list(unembedded(in_use.index).order_by("pk").values_list("pk", flat=True))
            with tqdm(total=len(pks), desc="embed", unit="msg", disable=no_progress) as bar:
                for start in range(0, len(pks), batch_size):
                    chunk = pks[start : start + batch_size]
                    embedded += history_embed(chunk, in_use)
                    bar.update(len(chunk))
        self.stdout.write(f"indexed {added} messages, embedded {embedded}")
