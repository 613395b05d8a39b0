"""Index stored messages missing from the history index, then embed every row without a current vector."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from tqdm import tqdm

from memories.history.services.indexing import history_backfill, unindexed_message_count
from memories.history.services.vectors import history_embed, unembedded
from memories.longterm.services.embedding_index import index_in_use


class Command(BaseCommand):
    help = "Backfill the history index: add stored messages not indexed yet, embed rows of no or another index."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--keyword-only", action="store_true", help="index messages, write no vectors")

    def handle(self, *args, batch_size: int, keyword_only: bool, **options) -> None:
        with tqdm(total=unindexed_message_count(), desc="index", unit="msg") as bar:
            added = history_backfill(batch_size=batch_size, progress=bar.update)
        embedded = 0
        if not keyword_only:
            in_use = index_in_use()  # 503-style error when the embedder does not match the active index
            pks = list(unembedded(in_use.index).order_by("pk").values_list("pk", flat=True))
            with tqdm(total=len(pks), desc="embed", unit="msg") as bar:
                for start in range(0, len(pks), batch_size):
                    chunk = pks[start : start + batch_size]
                    embedded += history_embed(chunk, in_use)
                    bar.update(len(chunk))
        self.stdout.write(f"indexed {added} messages, embedded {embedded}")
