"""Build the vector index for the configured embedding identity and make it the active one (docs/contract.md).

    python manage.py reindex_embeddings [--batch-size 256]

Resumable: interrupt it at any point and run it again; it continues with the records not yet in
the new index. Until it finishes, semantic search and writes answer 503 `embedding_index_mismatch`.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.longterm.services.reindex import reindex_activate, reindex_batch, reindex_pending, reindex_prepare
from memoryhub.clients.errors import UpstreamError
from memoryhub.wording import count

MAX_ROUNDS_WITHOUT_PROGRESS = 5


class Command(BaseCommand):
    help = "Embed every long-term memory with the configured embedder into a new index, then activate it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch-size", type=int, default=256, help="records embedded per request (default 256)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")

    def handle(self, *args, batch_size: int, no_progress: bool, **options) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            job = reindex_prepare()
            self.stdout.write(
                f"index {job.index.pk}: {job.index.identity_key} on {job.index.backend} ({job.index.status})"
            )
            moved = self._fill(job, batch_size, no_progress)
        except UpstreamError as exc:  # the embedder is down: stop; the next run resumes where this one stopped
            raise CommandError(f"{exc.code}: {exc.message} — nothing is lost; run the command again") from exc
        job.index.refresh_from_db()
        self.stdout.write(
            self.style.SUCCESS(
                f"active index {job.index.pk}: {job.index.identity_key} on {job.index.backend}, "
                f"{count(job.index.records_indexed, 'record')} ({moved} embedded in this run)"
            )
        )

    def _fill(self, job, batch_size: int, no_progress: bool) -> int:
        moved, idle_rounds = 0, 0
        with tqdm(total=reindex_pending(job.index).count(), unit="memory", disable=no_progress, desc="reindex") as bar:
            while True:
                step = reindex_batch(job, batch_size=batch_size)
                moved += step
                bar.update(step)
                if step:
                    idle_rounds = 0
                    continue
                if reindex_activate(job):
                    return moved
                idle_rounds += 1  # records changed under us between the batch and the activation
                if idle_rounds >= MAX_ROUNDS_WITHOUT_PROGRESS:
                    raise CommandError("records keep changing during activation; run the command again")
                bar.total = bar.n + reindex_pending(job.index).count()
