"""The `Idempotency-Key` header: an HTTP contract, so the edge stores and replays the HTTP response itself.

The first successful answer to a request carrying the header is stored in the run-once store in the
same transaction as the write; the same key with the same method, path and body gets that answer again
(`Idempotent-Replayed: true`) without a second write; the same key with another request is 422.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rest_framework.response import Response

from memories.services import runonce
from memoryhub.addresses import ConversationAddress

HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict
    replayed: bool = False


ANSWER = runonce.Codec[Answer](
    encode=lambda answer: {"status": answer.status, "body": answer.body},
    decode=lambda stored: Answer(stored["status"], stored["body"], replayed=True),
)


def idempotent_response(request, address: ConversationAddress, action: str, perform: Callable[[], Answer]) -> Response:
    """`perform` once per (product, Idempotency-Key); without the header, simply `perform`. The record names the
    addressed user and conversation: erasing either removes it."""
    key = request.headers.get(HEADER)
    if key is None:
        answer = perform()  # no run-once record, so no transaction around the write either (no extra round trips)
    else:
        fingerprint = runonce.request_fingerprint(request.method, request.path, request.data)
        answer = runonce.run_once(runonce.RunOnce.idempotency_key(address, key, action, fingerprint), perform, ANSWER)
    headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
    return Response(answer.body, status=answer.status, headers=headers)
