"""A webhook receiver on 127.0.0.1 that verifies every delivery with the `standardwebhooks` library."""

from __future__ import annotations

from dataclasses import dataclass, field

from standardwebhooks import Webhook, WebhookVerificationError

from tests.support.http_server import RecordedRequest, Reply, StubHttpServer

PATH = "/hooks/memoryhub"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified_by: list[str]  # which of the receiver's secrets verified this delivery
    payload: dict | None


@dataclass
class Receiver:
    """Answers with the queued replies (then 200); records what each secret says about every request."""

    server: StubHttpServer
    secrets: list[str] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server.route("POST", PATH, self._handle)

    @property
    def url(self) -> str:
        return self.server.url + PATH

    def _handle(self, request: RecordedRequest) -> Reply:
        verified, payload = [], None
        for secret in self.secrets:
            try:
                payload = Webhook(secret).verify(request.body, request.headers)
                verified.append(secret)
            except WebhookVerificationError:
                pass
        self.received.append(Received(request.headers, request.body, verified, payload))
        return self.replies.pop(0) if self.replies else Reply(200, {"ok": True})

    def verified(self) -> list[dict]:
        """The payloads of the deliveries that verified with every secret the receiver holds."""
        assert self.received, "nothing was delivered"
        for item in self.received:
            assert item.verified_by == self.secrets, ("a delivery did not verify", item.headers, item.body[:200])
        return [item.payload for item in self.received if item.payload is not None]

    def types(self) -> list[str]:
        return [p["type"] for p in self.verified()]


def register(api, receiver: Receiver, events: list[str] | None = None, **extra) -> dict:
    """Register the receiver's URL for `events` (all by default); the receiver keeps the secret shown once."""
    response = api.post("/v1/webhooks", {"url": receiver.url, "events": events or ["*"], **extra})
    assert response.status_code == 201, response.json()
    body = response.json()
    receiver.secrets.append(body["secret"])
    return body
