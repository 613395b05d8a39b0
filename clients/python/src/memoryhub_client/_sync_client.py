"""The sync client: GENERATED from _async_client.py by scripts/unasync.py; do not edit."""

from __future__ import annotations

import time
import builtins
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, Literal, cast

import httpx

from . import models as m
from ._core import (
    Call,
    RetryPolicy,
    answer,
    auth_headers,
    body,
    new_key,
    retry_after,
    seg,
    status_retryable,
    transport_error_retryable,
)
from .errors import MemoryHubConnectionError


class MemoryHub:
    """memoryhub's public API. `api_key` is a product key (`mhk_…`); for `/v1/tools` use `tools(tool_token)`."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self._owns_client = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self.kinds = Kinds(self)
        self.scenarios = Scenarios(self)
        self.webhooks = Webhooks(self)
        self.tool_tokens = ToolTokens(self)
        self.lifecycle = Lifecycle(self)
        self.product = ProductSettings(self)

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_client:
            self._http.close()

    # -- the areas ------------------------------------------------------------------------------------------------

    def conversation(self, user_id: str, conversation_id: str) -> Conversation:
        return Conversation(self, user_id, conversation_id)

    def memory(self, user_id: str, conversation_id: str) -> MemoryDocumentClient:
        """The conversation's JSON memory document (compare-and-set on `revision`)."""
        return MemoryDocumentClient(self, f"/v1/users/{seg(user_id)}/conversations/{seg(conversation_id)}")

    def memories(self, user_id: str) -> LongTermMemories:
        """The user's long-term memories (any kind)."""
        return LongTermMemories(self, user_id)

    def tasks(self, user_id: str) -> Tasks:
        return Tasks(self, user_id)

    def tools(self, tool_token: str) -> Tools:
        """`/v1/tools` and `/v1/tools/call`, authenticated by a tool token (never by the product key)."""
        return Tools(self, tool_token)

    # -- the transport --------------------------------------------------------------------------------------------

    def _request(self, call: Call, *, token: str | None = None) -> Any:
        headers = {**auth_headers(token or self._api_key), **call.headers}
        url = self.base_url + call.path
        kwargs = {**_kwargs(call), "headers": headers}
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, url, **kwargs)
            except httpx.TransportError as exc:
                if attempt < self.retry.max_retries and transport_error_retryable(exc, call):
                    time.sleep(self.retry.delay(attempt))
                    attempt += 1
                    continue
                raise MemoryHubConnectionError(f"{call.method} {call.path}: {exc!r}") from exc
            if attempt < self.retry.max_retries and status_retryable(response.status_code, call):
                time.sleep(self.retry.delay(attempt, retry_after(response)))
                attempt += 1
                continue
            return answer(response, call)

    def _iterate(self, call: Call, *, token: str | None = None) -> Iterator[Any]:
        """Every item of a keyset-paginated list, following `next` (docs/contract.md#lists-and-paging)."""
        while True:
            page = self._request(call, token=token)
            for item in page["results"]:
                yield item
            if not page.get("next"):
                return
            call = replace(call, params={**call.params, "cursor": page["next"]})


def _kwargs(call: Call) -> dict[str, Any]:
    from ._core import request_kwargs

    return request_kwargs(call)


def _get(path: str, **params: Any) -> Call:
    return Call("GET", path, params=params, idempotent=True)


class _Area:
    def __init__(self, hub: MemoryHub) -> None:
        self._hub = hub


class MemoryDocumentClient(_Area):
    def __init__(self, hub: MemoryHub, conversation_path: str) -> None:
        super().__init__(hub)
        self._path = conversation_path + "/memory"

    def get(self) -> m.MemoryDocument:
        data = self._hub._request(_get(self._path))
        return m.MemoryDocument(revision=data["revision"], memory=data["memory"])

    def put(
        self, *, expected_revision: int, memory: Mapping[str, Any], idempotency_key: str | None = None
    ) -> int:
        """Replace the document if its revision is still `expected_revision`; the new revision.

        Raises RevisionConflict (`current_revision`) when another writer won: re-read and decide again. An
        Idempotency-Key is generated when none is given, so a retry after a lost answer never writes twice.
        """
        call = Call(
            "PUT",
            self._path,
            json={"expectedRevision": expected_revision, "memory": memory},
            headers={"Idempotency-Key": idempotency_key or new_key()},
            idempotent=True,
        )
        return cast(int, (self._hub._request(call))["revision"])

    def revisions(self, *, limit: int | None = None, cursor: str | None = None) -> m.Page[m.MemoryRevision]:
        return cast("m.Page[m.MemoryRevision]", self._hub._request(_revisions(self._path, limit, cursor)))

    def iter_revisions(self, *, limit: int | None = None) -> Iterator[m.MemoryRevision]:
        return self._hub._iterate(_revisions(self._path, limit, None))


def _revisions(path: str, limit: int | None, cursor: str | None) -> Call:
    return _get(path + "/revisions", limit=limit, cursor=cursor)


class Conversation(_Area):
    """One conversation of one user: its memory document, turns, history, tables, state, story, diaries."""

    def __init__(self, hub: MemoryHub, user_id: str, conversation_id: str) -> None:
        super().__init__(hub)
        self.user_id, self.conversation_id = user_id, conversation_id
        self._path = f"/v1/users/{seg(user_id)}/conversations/{seg(conversation_id)}"
        self.memory = MemoryDocumentClient(hub, self._path)

    # turns
    def prepare_turn(
        self,
        *,
        scenario_id: str,
        user_message: str,
        subscription_category: str | None = None,
        request_id: str | None = None,
        replaces_turn_id: int | None = None,
        name: str | None = None,
        user_name: str | None = None,
        present: list[str] | None = None,
    ) -> m.PreparedTurn:
        """`name`, `user_name` and `present` are the round's witness scope (docs/roleplay.md)."""
        payload = body(
            scenarioId=scenario_id,
            userMessage=user_message,
            subscriptionCategory=subscription_category,
            requestId=request_id,
            replacesTurnId=replaces_turn_id,
            name=name,
            userName=user_name,
            present=present,
        )
        return cast(m.PreparedTurn, self._hub._request(Call("POST", self._path + "/turns", json=payload)))

    def get_turn(self, turn_id: int) -> m.Turn:
        return cast(m.Turn, self._hub._request(_get(f"{self._path}/turns/{seg(turn_id)}")))

    def complete_turn(self, turn_id: int, *, assistant_message: str) -> m.Completion:
        """Store the reply (and commit, with commitOn "completed"). The same reply again answers the committed
        turn without doing anything twice, so this call is retried like a read."""
        call = Call(
            "POST",
            f"{self._path}/turns/{seg(turn_id)}/complete",
            json={"assistantMessage": assistant_message},
            idempotent=True,
        )
        return cast(m.Completion, self._hub._request(call))

    def accept_turn(self, turn_id: int) -> m.Completion:
        call = Call("POST", f"{self._path}/turns/{seg(turn_id)}/accept", json={})
        return cast(m.Completion, self._hub._request(call))

    # history
    def messages(self, *, limit: int | None = None, cursor: str | None = None) -> m.Page[m.Message]:
        call = _get(self._path + "/messages", limit=limit, cursor=cursor)
        return cast("m.Page[m.Message]", self._hub._request(call))

    def iter_messages(self, *, limit: int | None = None) -> Iterator[m.Message]:
        return self._hub._iterate(_get(self._path + "/messages", limit=limit))

    def events(
        self, *, type: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> m.Page[m.Event]:
        call = _get(self._path + "/events", type=type, limit=limit, cursor=cursor)
        return cast("m.Page[m.Event]", self._hub._request(call))

    def iter_events(self, *, type: str | None = None, limit: int | None = None) -> Iterator[m.Event]:
        return self._hub._iterate(_get(self._path + "/events", type=type, limit=limit))

    def diaries(
        self, *, order: Literal["asc", "desc"] | None = None, limit: int | None = None, cursor: str | None = None
    ) -> m.Page[m.DiaryEntry]:
        call = _get(self._path + "/diaries", order=order, limit=limit, cursor=cursor)
        return cast("m.Page[m.DiaryEntry]", self._hub._request(call))

    def iter_diaries(
        self, *, order: Literal["asc", "desc"] | None = None, limit: int | None = None
    ) -> Iterator[m.DiaryEntry]:
        return self._hub._iterate(_get(self._path + "/diaries", order=order, limit=limit))

    def compactions(self, *, limit: int | None = None, cursor: str | None = None) -> m.Page[m.Compaction]:
        call = _get(self._path + "/compactions", limit=limit, cursor=cursor)
        return cast("m.Page[m.Compaction]", self._hub._request(call))

    # tables
    def tables(self) -> m.TableList:
        return cast(m.TableList, self._hub._request(_get(self._path + "/tables")))

    def get_table(self, table_id: int) -> m.Table:
        return cast(m.Table, self._hub._request(_get(f"{self._path}/tables/{seg(table_id)}")))

    def replace_table(self, table_id: int, *, expected_version: int, rows: list[Any]) -> m.TableEdited:
        call = Call(
            "PUT", f"{self._path}/tables/{seg(table_id)}", json={"expectedVersion": expected_version, "rows": rows}
        )
        return cast(m.TableEdited, self._hub._request(call))

    def iter_table_versions(self, table_id: int, *, limit: int | None = None) -> Iterator[m.TableVersion]:
        return self._hub._iterate(_get(f"{self._path}/tables/{seg(table_id)}/versions", limit=limit))

    # conversation state
    def state(self, *, scenario: str | None = None, view: str | None = None) -> m.State:
        return cast(m.State, self._hub._request(_get(self._path + "/state", scenario=scenario, view=view)))

    def submit_state_candidate(
        self,
        *,
        scenario_id: str,
        base_revision: int,
        text: str | None = None,
        upsert: list[Mapping[str, Any]] | None = None,
        delete: list[Mapping[str, Any]] | None = None,
        operation_id: str | None = None,
        turn_id: int | None = None,
    ) -> m.Committed:
        """`turn_id`: the turn whose reply this candidate comes from (superseding it rolls the commit back)."""
        payload = body(
            scenarioId=scenario_id,
            baseRevision=base_revision,
            text=text,
            upsert=upsert,
            delete=delete,
            operationId=operation_id or new_key(),
            turnId=turn_id,
        )
        call = Call("POST", self._path + "/state/candidates", json=payload, idempotent=True)
        return cast(m.Committed, self._hub._request(call))

    def iter_state_revisions(self, *, limit: int | None = None) -> Iterator[m.StateRevision]:
        return self._hub._iterate(_get(self._path + "/state/revisions", limit=limit))

    # story
    def story(self) -> m.Story:
        return cast(m.Story, self._hub._request(_get(self._path + "/story")))

    def settle_story(
        self,
        *,
        expected_version: int,
        anchor_message_id: int,
        set_facts: Mapping[str, Any] | None = None,
        unset_facts: list[str] | None = None,
        append_events: list[Mapping[str, Any]] | None = None,
        narrative: Any = None,
        operation_id: str | None = None,
    ) -> m.Story:
        payload = body(
            expectedVersion=expected_version,
            anchorMessageId=anchor_message_id,
            setFacts=set_facts,
            unsetFacts=unset_facts,
            appendEvents=append_events,
            narrative=narrative,
            operationId=operation_id or new_key(),
        )
        call = Call("POST", self._path + "/story/settlements", json=payload, idempotent=True)
        return cast(m.Story, self._hub._request(call))

    def iter_story_versions(self, *, limit: int | None = None) -> Iterator[m.StoryVersion]:
        return self._hub._iterate(_get(self._path + "/story/versions", limit=limit))

    # tool tokens and erasure
    def issue_tool_token(
        self,
        *,
        scenario_id: str | None = None,
        ttl_seconds: int | None = None,
        subscription_category: str | None = None,
    ) -> m.ToolTokenMinted:
        """A short-lived token for model-facing tools (`/v1/tools`, `/mcp`), bound to this conversation."""
        payload = body(scenarioId=scenario_id, ttlSeconds=ttl_seconds, subscriptionCategory=subscription_category)
        call = Call("POST", self._path + "/tool-tokens", json=payload)
        return cast(m.ToolTokenMinted, self._hub._request(call))

    def erase(self) -> m.ErasureStarted:
        return cast(m.ErasureStarted, self._hub._request(Call("DELETE", self._path, idempotent=True)))


class LongTermMemories(_Area):
    def __init__(self, hub: MemoryHub, user_id: str) -> None:
        super().__init__(hub)
        self.user_id = user_id
        self._path = f"/v1/users/{seg(user_id)}/memories"

    def create(
        self,
        *,
        kind: str,
        content: Mapping[str, Any],
        evidence: str,
        source: str,
        consent: bool,
        operation_id: str | None = None,
        expires_at: str | None = None,
        turn_id: int | None = None,
    ) -> m.Memory:
        """Propose a memory; admission may refuse it (RejectedByPolicy with `reason`). An operationId is generated
        when none is given, so retries replay the first result. `turn_id`: the turn it was written for
        (regenerating that turn's reply rolls it back)."""
        payload = body(
            kind=kind,
            content=dict(content),
            evidence=evidence,
            source=source,
            consent=consent,
            operationId=operation_id or new_key(),
            expiresAt=expires_at,
            turnId=turn_id,
        )
        return cast(m.Memory, self._hub._request(Call("POST", self._path, json=payload, idempotent=True)))

    def get(self, memory_id: str) -> m.Memory:
        return cast(m.Memory, self._hub._request(_get(f"{self._path}/{seg(memory_id)}")))

    def update(
        self,
        memory_id: str,
        *,
        expected_version: int,
        content: Mapping[str, Any] | None = None,
        evidence: str | None = None,
        source: str | None = None,
        consent: bool | None = None,
        operation_id: str | None = None,
        expires_at: str | None = None,
        clear_expiry: bool = False,
    ) -> m.Memory:
        payload = body(
            expectedVersion=expected_version,
            content=dict(content) if content is not None else None,
            evidence=evidence,
            source=source,
            consent=consent,
            operationId=operation_id or new_key(),
            expiresAt=expires_at,
        )
        if clear_expiry:
            payload["expiresAt"] = None
        call = Call("PATCH", f"{self._path}/{seg(memory_id)}", json=payload, idempotent=True)
        return cast(m.Memory, self._hub._request(call))

    def delete(self, memory_id: str, *, expected_version: int | None = None) -> None:
        """Retried: a memory id is never given again, so a retry deletes this memory or answers NotFound."""
        params = {"expectedVersion": expected_version}
        self._hub._request(Call("DELETE", f"{self._path}/{seg(memory_id)}", params=params, idempotent=True))

    def list(
        self,
        *,
        kind: str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.Page[m.Memory]:
        call = _get(self._path, kind=kind, include="superseded" if include_superseded else None, limit=limit)
        call.params["cursor"] = cursor
        return cast("m.Page[m.Memory]", self._hub._request(call))

    def iter(
        self, *, kind: str | None = None, include_superseded: bool = False, limit: int | None = None
    ) -> Iterator[m.Memory]:
        include = "superseded" if include_superseded else None
        return self._hub._iterate(_get(self._path, kind=kind, include=include, limit=limit))

    def search(
        self,
        query: str,
        *,
        mode: m.SearchMode = "semantic",
        limit: int | None = None,
        cursor: str | None = None,
        min_score: float | None = None,
    ) -> m.SearchPage:
        """`mode` keyword, semantic or hybrid (docs/recall.md); `min_score` floors the cosine (minScore)."""
        payload = body(query=query, mode=mode, limit=limit, cursor=cursor, minScore=min_score)
        call = Call("POST", self._path + "/search", json=payload, idempotent=True)
        return cast(m.SearchPage, self._hub._request(call))

    def iter_search(
        self, query: str, *, mode: m.SearchMode = "semantic", limit: int | None = None, min_score: float | None = None
    ) -> Iterator[m.SearchResult]:
        cursor: str | None = None
        while True:
            page = self.search(query, mode=mode, limit=limit, cursor=cursor, min_score=min_score)
            for result in page["results"]:
                yield result
            cursor = page["next"]
            if not cursor:
                return


class Tasks(_Area):
    """Task checkpoints and reports (docs/long-term-memories.md, section 7)."""

    def __init__(self, hub: MemoryHub, user_id: str) -> None:
        super().__init__(hub)
        self._path = f"/v1/users/{seg(user_id)}/tasks"

    def get(self, task_id: str) -> m.Task:
        return cast(m.Task, self._hub._request(_get(f"{self._path}/{seg(task_id)}")))

    def checkpoint(
        self, task_id: str, stage: str, *, data: Any, input: Any = None, operation_id: str | None = None
    ) -> m.CheckpointResult:
        payload = body(data=data, input=input, operationId=operation_id or new_key())
        call = Call("PUT", f"{self._path}/{seg(task_id)}/checkpoints/{seg(stage)}", json=payload, idempotent=True)
        return cast(m.CheckpointResult, self._hub._request(call))

    def publish_report(self, task_id: str, *, data: Any, operation_id: str | None = None) -> m.ReportResult:
        payload = body(data=data, operationId=operation_id or new_key())
        call = Call("PUT", f"{self._path}/{seg(task_id)}/report", json=payload, idempotent=True)
        return cast(m.ReportResult, self._hub._request(call))


class Kinds(_Area):
    """Product-defined long-term memory kinds (`/v1/memory-kinds`)."""

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> m.KindList:
        """One page of the product's own kinds in name order (the built-in `preference` is not listed)."""
        call = _get("/v1/memory-kinds", limit=limit, cursor=cursor)
        return cast(m.KindList, self._hub._request(call))

    def iter(self, *, limit: int | None = None) -> Iterator[m.Kind]:
        return self._hub._iterate(_get("/v1/memory-kinds", limit=limit))

    def get(self, name: str) -> m.Kind:
        return cast(m.Kind, self._hub._request(_get(f"/v1/memory-kinds/{seg(name)}")))

    def create(
        self,
        *,
        name: str,
        content_schema: Mapping[str, Any],
        description: str | None = None,
        stated_fields: builtins.list[str] | None = None,
        searchable: bool | None = None,
        text_field: str | None = None,
        max_per_user: int | None = None,
        default_ttl_days: int | None = None,
        evidence_policy: m.EvidencePolicy | None = None,
    ) -> m.Kind:
        """`evidence_policy`: "statement" (the server's default) or "quote" (docs/long-term-memories.md, section 8)."""
        payload = body(
            name=name,
            contentSchema=dict(content_schema),
            description=description,
            statedFields=stated_fields,
            searchable=searchable,
            textField=text_field,
            maxPerUser=max_per_user,
            defaultTtlDays=default_ttl_days,
            evidencePolicy=evidence_policy,
        )
        return cast(m.Kind, self._hub._request(Call("POST", "/v1/memory-kinds", json=payload)))

    def update(self, name: str, **fields: Any) -> m.Kind:
        """PATCH with the API's own field names (`description`, `statedFields`, `evidencePolicy`, …)."""
        call = Call("PATCH", f"/v1/memory-kinds/{seg(name)}", json=fields)
        return cast(m.Kind, self._hub._request(call))

    def delete(self, name: str, *, cascade: bool = False) -> None:
        """Not retried: the name is free again once deleted, and a retry would delete a kind created again under it
        meanwhile (with `cascade`, its memories too)."""
        params = {"cascade": True if cascade else None}
        self._hub._request(Call("DELETE", f"/v1/memory-kinds/{seg(name)}", params=params))


class Scenarios(_Area):
    def create(self, scenario: m.ScenarioRequest) -> m.Scenario:
        return cast(m.Scenario, self._hub._request(Call("POST", "/v1/scenarios", json=dict(scenario))))

    def get(self, scenario_id: str) -> m.Scenario:
        return cast(m.Scenario, self._hub._request(_get(f"/v1/scenarios/{seg(scenario_id)}")))

    def replace(self, scenario: m.ScenarioRequest) -> m.Scenario:
        """A new version of the scenario (turns keep the version they used)."""
        call = Call("PUT", f"/v1/scenarios/{seg(scenario['id'])}", json=dict(scenario))
        return cast(m.Scenario, self._hub._request(call))

    def patch(self, scenario_id: str, **fields: Any) -> m.Scenario:
        call = Call("PATCH", f"/v1/scenarios/{seg(scenario_id)}", json=fields)
        return cast(m.Scenario, self._hub._request(call))

    def delete(self, scenario_id: str) -> None:
        """Not retried: the id is free again once deleted; a retry would delete a scenario created again under it."""
        self._hub._request(Call("DELETE", f"/v1/scenarios/{seg(scenario_id)}"))

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> m.Page[m.Scenario]:
        call = _get("/v1/scenarios", limit=limit, cursor=cursor)
        return cast("m.Page[m.Scenario]", self._hub._request(call))

    def iter(self, *, limit: int | None = None) -> Iterator[m.Scenario]:
        return self._hub._iterate(_get("/v1/scenarios", limit=limit))

    def iter_versions(self, scenario_id: str, *, limit: int | None = None) -> Iterator[m.ScenarioVersion]:
        return self._hub._iterate(_get(f"/v1/scenarios/{seg(scenario_id)}/versions", limit=limit))


class Webhooks(_Area):
    def create(
        self, *, url: str, events: list[str], enabled: bool | None = None, description: str | None = None
    ) -> m.WebhookWithSecret:
        payload = body(url=url, events=events, enabled=enabled, description=description)
        return cast(m.WebhookWithSecret, self._hub._request(Call("POST", "/v1/webhooks", json=payload)))

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> m.Page[m.Webhook]:
        call = _get("/v1/webhooks", limit=limit, cursor=cursor)
        return cast("m.Page[m.Webhook]", self._hub._request(call))

    def iter(self, *, limit: int | None = None) -> Iterator[m.Webhook]:
        return self._hub._iterate(_get("/v1/webhooks", limit=limit))

    def get(self, endpoint_id: int) -> m.Webhook:
        return cast(m.Webhook, self._hub._request(_get(f"/v1/webhooks/{seg(endpoint_id)}")))

    def update(self, endpoint_id: int, **fields: Any) -> m.Webhook:
        call = Call("PATCH", f"/v1/webhooks/{seg(endpoint_id)}", json=fields)
        return cast(m.Webhook, self._hub._request(call))

    def delete(self, endpoint_id: int) -> None:
        """Retried: an endpoint id is never given again, so a retry deletes this endpoint or answers NotFound."""
        self._hub._request(Call("DELETE", f"/v1/webhooks/{seg(endpoint_id)}", idempotent=True))

    def rotate_secret(self, endpoint_id: int, *, overlap_seconds: int | None = None) -> m.WebhookWithSecret:
        call = Call("POST", f"/v1/webhooks/{seg(endpoint_id)}/rotate-secret", json=body(overlapSeconds=overlap_seconds))
        return cast(m.WebhookWithSecret, self._hub._request(call))

    def iter_deliveries(self, endpoint_id: int, *, limit: int | None = None) -> Iterator[m.Delivery]:
        return self._hub._iterate(_get(f"/v1/webhooks/{seg(endpoint_id)}/deliveries", limit=limit))

    def redeliver(self, endpoint_id: int, delivery_id: int) -> m.Delivery:
        path = f"/v1/webhooks/{seg(endpoint_id)}/deliveries/{seg(delivery_id)}/redeliver"
        return cast(m.Delivery, self._hub._request(Call("POST", path, json={})))


class ToolTokens(_Area):
    def issue(
        self,
        user_id: str,
        conversation_id: str,
        *,
        scenario_id: str | None = None,
        ttl_seconds: int | None = None,
        subscription_category: str | None = None,
    ) -> m.ToolTokenMinted:
        return self._hub.conversation(user_id, conversation_id).issue_tool_token(
            scenario_id=scenario_id, ttl_seconds=ttl_seconds, subscription_category=subscription_category
        )

    def revoke(self, token_id: str) -> m.ToolTokenState:
        call = Call("POST", f"/v1/tool-tokens/{seg(token_id)}/revoke", json={}, idempotent=True)
        return cast(m.ToolTokenState, self._hub._request(call))

    def revoke_all(self) -> m.ToolTokensRevoked:
        call = Call("POST", "/v1/tool-tokens/revoke-all", json={}, idempotent=True)
        return cast(m.ToolTokensRevoked, self._hub._request(call))


class Tools(_Area):
    def __init__(self, hub: MemoryHub, tool_token: str) -> None:
        super().__init__(hub)
        self._token = tool_token

    def list(self) -> m.ToolList:
        return cast(m.ToolList, self._hub._request(_get("/v1/tools"), token=self._token))

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> m.ToolCallResult:
        """Run one tool; never retried on a lost answer (a write tool is not idempotent)."""
        request = Call("POST", "/v1/tools/call", json={"name": name, "arguments": dict(arguments or {})})
        return cast(m.ToolCallResult, self._hub._request(request, token=self._token))


class Lifecycle(_Area):
    """Export, import and erasure (docs/data-lifecycle.md)."""

    def export_user(self, user_id: str) -> m.ExportStarted:
        call = Call("POST", f"/v1/users/{seg(user_id)}/exports", json={})
        return cast(m.ExportStarted, self._hub._request(call))

    def get_export(self, export_id: str) -> m.Export:
        return cast(m.Export, self._hub._request(_get(f"/v1/exports/{seg(export_id)}")))

    def download_export(self, export_id: str) -> bytes:
        """The export file (gzip JSON Lines); ExportNotReady until it is done."""
        call = Call("GET", f"/v1/exports/{seg(export_id)}/download", idempotent=True, raw=True)
        return cast(bytes, self._hub._request(call))

    def import_user(self, user_id: str, export_file: bytes) -> m.ImportStarted:
        call = Call(
            "POST",
            f"/v1/users/{seg(user_id)}/imports",
            content=export_file,
            headers={"Content-Type": "application/gzip"},
        )
        return cast(m.ImportStarted, self._hub._request(call))

    def get_import(self, import_id: str) -> m.Import:
        return cast(m.Import, self._hub._request(_get(f"/v1/imports/{seg(import_id)}")))

    def erase_user(self, user_id: str) -> m.ErasureStarted:
        call = Call("DELETE", f"/v1/users/{seg(user_id)}", idempotent=True)
        return cast(m.ErasureStarted, self._hub._request(call))

    def erase_conversation(self, user_id: str, conversation_id: str) -> m.ErasureStarted:
        return self._hub.conversation(user_id, conversation_id).erase()

    def get_erasure(self, erasure_id: str) -> m.Erasure:
        return cast(m.Erasure, self._hub._request(_get(f"/v1/erasures/{seg(erasure_id)}")))


class ProductSettings(_Area):
    def get(self) -> m.Product:
        return cast(m.Product, self._hub._request(_get("/v1/product")))

    def update(self, *, retention: Mapping[str, int | None]) -> m.Product:
        call = Call("PATCH", "/v1/product", json={"retention": dict(retention)})
        return cast(m.Product, self._hub._request(call))
