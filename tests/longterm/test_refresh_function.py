"""PostgreSQL: `memoryhub_longterm_refresh` of migration 0010 answers what 0008's answered, in every state.

0010 rewrote the function as one statement for speed; its arguments and result are 0008's contract, which a
process running the code of 0008 still relies on during a deployment. Both bodies are called here with the
same arguments, one right after the other, in each state a held user goes through.
"""

from __future__ import annotations

from importlib import import_module

import pytest
from django.db import connection

from memories.longterm.services.embedding_index import index_last_seen
from tests.longterm.support import create, memories_url, proposal

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]

ARGUMENTS = "%s, %s, %s::text[], %s::pg_snapshot, %s, %s, %s, %s, %s"


@pytest.fixture
def previous_function():
    """0008's body under another name, beside the current function."""
    body = import_module("memories.longterm.migrations.0008_resident_refresh").FORWARD[-1]
    with connection.cursor() as cursor:
        cursor.execute(body.replace("FUNCTION memoryhub_longterm_refresh(", "FUNCTION longterm_refresh_0008("))
    yield "longterm_refresh_0008"
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP FUNCTION longterm_refresh_0008(text, text, text[], pg_snapshot, integer, bigint, bigint, text, text)"
        )


def both(previous: str, product: str, user: str, terms: list[str], since, limit: int, marker, **index) -> list:
    """The current function's rows, after checking that 0008's body answers the same."""
    answers = []
    for function in ("memoryhub_longterm_refresh", previous):
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT * FROM {function}({ARGUMENTS})",
                [product, user, terms, since, limit, marker, index["pk"], index["identity"], index["backend"]],
            )
            answers.append(sorted(cursor.fetchall(), key=lambda row: row[9] or 0))
    assert answers[0] == answers[1]
    return answers[0]


def test_the_one_statement_function_answers_as_the_previous_one_in_every_state(alice, previous_function):
    in_use = index_last_seen()
    index = {"pk": int(in_use.index.pk), "identity": in_use.index.identity_key, "backend": in_use.index.backend}
    product = alice.product.pk
    ids = [create(alice, proposal(content={"language": "zh", "text": text}))["id"] for text in ("Coffee", "Tea")]
    create(alice, proposal(content={"language": "zh", "text": "Someone else's coffee"}), user="u2")

    def ask(since, marker, terms=(), limit=1000, user="u1", **changed):
        return both(previous_function, product, user, list(terms), since, limit, marker, **{**index, **changed})

    whole = ask(None, None, ["coffee", "e-mail", "茶"])
    assert [row[0] for row in whole] == [2, 2] and len({row[9] for row in whole}) == 2  # counted, both rows
    assert whole[0][5] == ["'coffee'", "'e-mail' & 'e' & 'mail'", "'茶'"]
    snapshot, marker = whole[0][1], whole[0][2]
    unchanged = ask(snapshot, marker)
    assert len(unchanged) == 1 and unchanged[0][0] is None and unchanged[0][9] is None  # the header alone
    added = create(alice, proposal(content={"language": "zh", "text": "Green tea"}))["id"]
    changed = ask(snapshot, marker)
    assert [row[12] for row in changed] == [added] and changed[0][0] is None
    assert alice.delete(f"{memories_url()}/{ids[0]}").status_code == 204
    after_deletion = ask(snapshot, marker)
    assert after_deletion[0][0] == 2 and after_deletion[0][2] != marker  # the marker moved: counted again
    assert ask(None, None, limit=1)[0][9] is None  # more rows than the bound: counted, none read
    assert ask(snapshot, marker, pk=index["pk"] + 1000)[0][3] is False  # not the active index
    assert ask(None, None, user="nobody")[0][0] == 0
