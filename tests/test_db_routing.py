"""Selectors of GET requests read a replica when DATABASE_REPLICA_URL is set (memoryhub/db_routing.py).

The replica here is a second database alias on the test database (what settings.py builds from
DATABASE_REPLICA_URL, mirrored for the tests): the queries each alias receives show where a read went.
"""

from __future__ import annotations

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext

from memories.selectors.documents import memory_document_get, memory_revisions_page
from memoryhub import db_routing
from memoryhub.addresses import ConversationAddress
from memoryhub.db_routing import REPLICA, ReplicaRouter, primary, replica_reads

pytestmark = pytest.mark.django_db(transaction=True)
CONV = "/v1/users/u1/conversations/c1"


@pytest.fixture
def replica(transactional_db, monkeypatch):
    """A "replica" alias: a second connection to the test database (settings.py builds it from the URL)."""
    monkeypatch.setattr(db_routing, "replica_configured", lambda: True)
    connections[REPLICA] = connections.create_connection("default")
    yield
    connections[REPLICA].close()
    del connections[REPLICA]


def queries(alias: str) -> CaptureQueriesContext:
    return CaptureQueriesContext(connections[alias])


def test_without_a_replica_every_read_goes_to_the_default_database():
    with replica_reads():
        assert ReplicaRouter().db_for_read(object) is None


def test_selectors_in_a_get_request_read_the_replica_and_cas_reads_the_primary(replica, alice):
    address = ConversationAddress(alice.product, "u1", "c1")
    with replica_reads():
        with queries(REPLICA) as on_replica, queries("default") as on_primary:
            memory_revisions_page(address, cursor=None, limit=10)
        assert len(on_replica) == 1 and len(on_primary) == 0
        with queries(REPLICA) as on_replica, queries("default") as on_primary:
            assert memory_document_get(address) == (0, None)  # @primary_reads: the revision a CAS write needs
        assert len(on_replica) == 0 and len(on_primary) == 1
        with queries(REPLICA) as on_replica, primary():
            memory_revisions_page(address, cursor=None, limit=10)
        assert len(on_replica) == 0


def test_reads_inside_a_transaction_or_after_a_write_stay_on_the_primary(replica, alice):
    address = ConversationAddress(alice.product, "u1", "c1")
    with replica_reads(), queries(REPLICA) as on_replica:
        with transaction.atomic():
            memory_revisions_page(address, cursor=None, limit=10)
        assert len(on_replica) == 0
        alice.product.save(update_fields=["name"])  # a write: the rest of the request reads what it wrote
        memory_revisions_page(address, cursor=None, limit=10)
    assert len(on_replica) == 0


def test_outside_a_get_request_nothing_reads_the_replica(replica, alice):
    address = ConversationAddress(alice.product, "u1", "c1")
    with queries(REPLICA) as on_replica:
        memory_revisions_page(address, cursor=None, limit=10)  # a task, a command, a POST
    assert len(on_replica) == 0


def test_over_http_get_lists_from_the_replica_and_writes_and_cas_reads_use_the_primary(replica, alice):
    with queries(REPLICA) as on_replica:
        assert alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    assert len(on_replica) == 0  # a write request reads nothing from the replica
    with queries(REPLICA) as on_replica:
        assert alice.get(f"{CONV}/memory").json() == {"revision": 1, "memory": {"a": 1}}
    assert not [q for q in on_replica if "memories_memorydocument" in q["sql"]]
    with queries(REPLICA) as on_replica:
        page = alice.get(f"{CONV}/memory/revisions").json()
    assert [r["revision"] for r in page["results"]] == [1]
    assert any("memories_memoryrevision" in q["sql"] for q in on_replica)


def test_the_replica_alias_is_never_migrated():
    assert ReplicaRouter().allow_migrate(REPLICA, "memories") is False
    assert ReplicaRouter().allow_migrate("default", "memories") is None


def test_database_replica_url_adds_the_replica_alias_and_the_migrations_skip_it():
    import json
    import os
    import subprocess
    import sys

    from tests.support.processes import ROOT

    script = (
        "import django, json; django.setup(); from django.conf import settings; from django.db import router; "
        "print(json.dumps([settings.DATABASES['replica']['NAME'], settings.DATABASES['replica']['TEST']['MIRROR'], "
        "router.allow_migrate('replica', 'memories')]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/primary",
        "DATABASE_REPLICA_URL": "postgres://reader@replica.internal:5432/primary",
    }
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["primary", "default", False]
