"""JSON memory documents: full replacement through memoryhub.cas, the write and its history in one SQL statement."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from memories.models import MemoryDocument, MemoryRevision
from memories.schemas import check_memory_against_schema
from memories.services.products import KeyChanged, KeySnapshot
from memories.validation import validate_memory, validate_revision
from memoryhub import cas, working_set
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.events import publish as publish_event

JSON_MEMORY_VARIABLE = "jsonMemory"
KEY_CHANGED = -1  # memoryhub_memory_cas_for_key's answer when the key or its product changed (nothing written)

_DOC = MemoryDocument._meta.db_table
_REV = MemoryRevision._meta.db_table
_REV_COLUMNS = "product_id, user_id, conversation_id, revision, memory, actor_type, actor, created_at"


def json_memory_scope(address: ConversationAddress) -> working_set.Scope:
    return address.scope(JSON_MEMORY_VARIABLE)


def memory_document_replace(
    *, address: ConversationAddress, expected_revision: int, memory: object, actor: Actor, schema: dict | None = None
) -> int:
    """Replace the whole document iff its stored revision is `expected_revision`; return the new revision."""
    checked = memory_document_check(address=address, expected_revision=expected_revision, memory=memory, schema=schema)
    return memory_document_write(checked, actor=actor)


@dataclass(frozen=True)
class CheckedReplacement:
    """A replacement that passed every check made before it is attempted; only `memory_document_check` makes one."""

    address: ConversationAddress
    expected_revision: int
    memory: object
    serialized: str  # the document as it is stored


def memory_document_check(
    *, address: ConversationAddress, expected_revision: int, memory: object, schema: dict | None = None
) -> CheckedReplacement:
    """Everything that would refuse the replacement before it is attempted (limits, the schema)."""
    validate_revision(expected_revision)
    serialized = validate_memory(memory)
    if schema is not None:  # a scenario's memorySchema (a tool call), which replaces the product's
        check_memory_against_schema(memory, schema, owner="the scenario's")
    else:
        check_memory_against_schema(memory, address.product.memory_schema)
    return CheckedReplacement(address, expected_revision, memory, serialized)


def memory_document_write(checked: CheckedReplacement, *, actor: Actor, key: KeySnapshot | None = None) -> int:
    """Attempt a checked replacement (the API checks a PUT's body before its rate-limit round trip, not twice).

    `key`: the caller's key as last read; the write then checks in its own statement that neither the key nor
    its product has changed since (PostgreSQL), and raises KeyChanged without writing anything otherwise.
    """
    address, expected_revision = checked.address, checked.expected_revision
    # With webhook endpoints, the revision and its memory.updated message commit together (nothing lost
    # between two transactions); without, the write stays one statement with no BEGIN/COMMIT around it.
    with transaction.atomic() if address.product.webhook_endpoints_enabled else nullcontext():
        # M7 (anything but old + 1 is reported, never accepted silently) and the conflict are memoryhub.cas's.
        revision = cas.compare_and_set(
            cas.Versioned(MemoryDocument, _document(address), kind="memory_document"),
            expected_revision,
            statement=lambda: _compare_and_set(address, expected_revision, checked.serialized, actor, key),
            invalidate=[json_memory_scope(address)],
        )
        publish_event(
            address.product,
            "memory.updated",
            user=address.user_id,
            conversation=address.conversation_id,
            data={"revision": revision, "actorType": actor.type},
        )
    return revision


def _document(address: ConversationAddress) -> dict:
    return {"product": address.product, "user_id": address.user_id, "conversation_id": address.conversation_id}


def _compare_and_set(
    address: ConversationAddress, expected: int, serialized: str, actor: Actor, api_key: KeySnapshot | None
) -> int | None:
    now = timezone.now()
    key = (address.product.pk, address.user_id, address.conversation_id)
    history = (*key, serialized, actor.type, actor.id[:200], now)
    if connection.vendor == "postgresql":
        return _cas_postgres(key, expected, serialized, now, history, api_key)
    return _cas_portable(key, expected, serialized, now, history)


def _cas_postgres(
    key: tuple, expected: int, serialized: str, now, history: tuple, api_key: KeySnapshot | None
) -> int | None:
    """One round trip: the conditional UPDATE … WHERE revision = expected (or the first INSERT) and its
    history row, in one atomic call of memoryhub_memory_cas (migration 0005), whose plans stay cached; with
    `api_key`, memoryhub_memory_cas_for_key (0017) checks the key and its product first, in the same call."""
    args = (*key, expected, serialized, now, *history[4:6])
    with connection.cursor() as cursor:
        if api_key is None:
            cursor.execute("SELECT memoryhub_memory_cas(%s, %s, %s, %s, CAST(%s AS jsonb), %s, %s, %s)", args)
        else:
            versions = (api_key.api_key.prefix, api_key.key_version, api_key.product_version)
            cursor.execute(
                "SELECT memoryhub_memory_cas_for_key(%s, %s, %s, %s, %s, %s, %s, CAST(%s AS jsonb), %s, %s, %s)",
                (*versions, *args),
            )
        committed = cursor.fetchone()[0]
    if committed == KEY_CHANGED:
        raise KeyChanged("the key or its product changed since it was read")
    return committed


def _cas_portable(key: tuple, expected: int, serialized: str, now, history: tuple) -> int | None:
    """SQLite: no DML in CTEs, so the write and the history row are two statements in one transaction."""
    with transaction.atomic(), connection.cursor() as cursor:
        if expected == 0:
            cursor.execute(
                f"INSERT INTO {_DOC} (product_id, user_id, conversation_id, revision, memory, created_at, updated_at)"
                " VALUES (%s, %s, %s, 1, %s, %s, %s)"
                " ON CONFLICT (product_id, user_id, conversation_id) DO NOTHING RETURNING revision",
                (*key, serialized, now, now),
            )
        else:
            cursor.execute(
                f"UPDATE {_DOC} SET revision = revision + 1, memory = %s, updated_at = %s"
                " WHERE product_id = %s AND user_id = %s AND conversation_id = %s AND revision = %s RETURNING revision",
                (serialized, now, *key, expected),
            )
        row = cursor.fetchone()
        if row is None:
            return None
        cursor.execute(
            f"INSERT INTO {_REV} ({_REV_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (*history[:3], row[0], *history[3:]),
        )
    return row[0]


def memory_document_delete(address: ConversationAddress) -> None:
    """An operator's delete of a conversation's document: the document and its revisions go together.

    A revision left behind would make the next write at revision 0 collide with it (its revision 1 exists).
    The working set is invalidated first, so a cache outage refuses the delete before anything is removed.
    """
    working_set.invalidate(json_memory_scope(address))
    with transaction.atomic():
        where = {"product": address.product, "user_id": address.user_id, "conversation_id": address.conversation_id}
        MemoryRevision.objects.filter(**where).delete()
        MemoryDocument.objects.filter(**where).delete()
