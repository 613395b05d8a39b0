"""Model-facing memory tools (TOOL1–TOOL3) and the short-lived tool tokens that fix their identity (T4).

A token is signed (a forged one costs no query) and has a row (IssuedToolToken, its id the token's `j`):
it authenticates only while that row is not revoked and the API key that minted it is active, checked in
the one query that also reads the product (docs/contract.md#tool-tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core import signing
from django.utils import timezone
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from memories.models import ApiKey, IssuedToolToken, Product, Scenario
from memories.selectors.documents import memory_document_get
from memories.services.documents import memory_document_replace
from memories.validation import validate_revision
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress, run_address_checks
from memoryhub.errors import Forbidden, InvalidRequest, NotFound, RevisionConflict
from memoryhub.runtimes.base import InvalidSubscriptionCategory, normalize_subscription_category

TOKEN_PREFIX = "mht_"
_SALT = "memoryhub.tool-token"
MAX_TTL_SECONDS = 24 * 3600
# Rows of tokens expired this long ago are deleted when the product mints its next token.
EXPIRED_KEPT = timedelta(days=1)

GET_MEMORY = {
    "type": "function",
    "function": {
        "name": "get_memory",
        "description": "Read this conversation's memory. Returns {revision, memory}; revision 0 and memory null "
        "when nothing was saved yet.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}
UPDATE_MEMORY = {
    "type": "function",
    "function": {
        "name": "update_memory",
        "description": "Replace this conversation's whole memory object (not a merge: fields you leave out are "
        "deleted). Pass the revision you read; on a conflict, read again and decide again.",
        "parameters": {
            "type": "object",
            "properties": {
                "expectedRevision": {"type": "integer", "minimum": 0, "maximum": 9007199254740990},
                "memory": {"type": "object"},
            },
            "required": ["expectedRevision", "memory"],
            "additionalProperties": False,
        },
    },
}
TOOLS: dict[str, dict[str, Any]] = {"get_memory": GET_MEMORY, "update_memory": UPDATE_MEMORY}


@dataclass(frozen=True)
class ToolToken:
    product_id: str
    user_id: str
    conversation_id: str
    scenario_slug: str | None
    token_id: str
    expires_at: datetime
    subscription_category: str | None = None  # the user's plan, for tools whose amount it decides (diaries)


@dataclass(frozen=True)
class MintedToolToken:
    id: str
    token: str  # shown once, never stored
    expires_at: datetime


def tool_token_mint(
    *,
    address: ConversationAddress,
    api_key: ApiKey,
    scenario_slug: str | None,
    ttl_seconds: int | None,
    subscription_category: str | None = None,
) -> MintedToolToken:
    ttl = settings.TOOL_TOKEN_DEFAULT_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    if scenario_slug is not None and not Scenario.objects.filter(product=address.product, slug=scenario_slug).exists():
        raise NotFound(f"no scenario {scenario_slug!r}")
    if subscription_category is not None:
        try:
            normalize_subscription_category(subscription_category)
        except InvalidSubscriptionCategory as exc:
            raise InvalidRequest(str(exc), details={"field": "subscriptionCategory"}) from None
    now = timezone.now()
    expires_at = (now + timedelta(seconds=ttl)).replace(microsecond=0)
    IssuedToolToken.objects.filter(product=address.product, expires_at__lt=now - EXPIRED_KEPT).delete()
    issued = IssuedToolToken.objects.create(
        product=address.product,
        api_key=api_key,
        user_id=address.user_id,
        conversation_id=address.conversation_id,
        scenario_slug=scenario_slug or "",
        expires_at=expires_at,
    )
    payload = {
        "p": address.product.pk,
        "u": address.user_id,
        "c": address.conversation_id,
        "s": scenario_slug,
        "j": issued.pk,
        "e": int(expires_at.timestamp()),
        **({"k": subscription_category} if subscription_category is not None else {}),
    }
    token = TOKEN_PREFIX + signing.dumps(payload, salt=_SALT, compress=True)
    return MintedToolToken(issued.pk, token, expires_at)


def tool_token_read(token: str) -> ToolToken | None:
    """Return the token's claims, or None when it is forged, malformed or expired."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        claims = signing.loads(token[len(TOKEN_PREFIX) :], salt=_SALT)
    except signing.BadSignature:
        return None
    expires_at = datetime.fromtimestamp(claims["e"], tz=UTC)
    if expires_at <= timezone.now():
        return None
    return ToolToken(claims["p"], claims["u"], claims["c"], claims["s"], claims["j"], expires_at, claims.get("k"))


def tool_token_authenticate(token: str) -> tuple[ToolToken, Product] | None:
    """The claims and product of a valid token, or None: forged, expired, revoked, or its key revoked.

    One query (the token's row by primary key, joined to its key and its product) on every request a token
    makes: revoking the token or its key takes effect from the next request on.
    """
    claims = tool_token_read(token)
    if claims is None:
        return None
    issued = (
        IssuedToolToken.objects.select_related("product")
        .filter(pk=claims.token_id, product_id=claims.product_id, revoked_at__isnull=True)
        .filter(api_key__revoked_at__isnull=True)
        .first()
    )
    return None if issued is None else (claims, issued.product)


def tool_token_revoke(*, product: Product, token_id: str) -> IssuedToolToken:
    """Revoke one of the product's tokens (again: nothing changes); another product's token is not found."""
    issued = IssuedToolToken.objects.filter(product=product, pk=token_id).first()
    if issued is None:
        raise NotFound(f"no tool token {token_id!r}")
    if issued.revoked_at is None:
        IssuedToolToken.objects.filter(pk=issued.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        issued.refresh_from_db(fields=["revoked_at"])
    return issued


def tool_tokens_revoke_all(*, product: Product) -> int:
    """Revoke every token of the product that still works (not revoked, not expired); answer how many."""
    now = timezone.now()
    live = IssuedToolToken.objects.filter(product=product, revoked_at__isnull=True, expires_at__gt=now)
    return live.update(revoked_at=now)


def tools_available(*, product: Product, token: ToolToken | None) -> list[dict]:
    if token is None:
        return list(TOOLS.values())
    return [TOOLS[name] for name in TOOLS if _may_call(product, token, name)]


def _scenario(product: Product, token: ToolToken) -> Scenario | None:
    if token.scenario_slug is None:
        return None
    return Scenario.objects.filter(product=product, slug=token.scenario_slug).first()


def _may_call(product: Product, token: ToolToken, name: str) -> bool:
    if name != "update_memory" or token.scenario_slug is None:
        return True
    # A token bound to a scenario that is gone must not gain what that scenario withheld.
    scenario = _scenario(product, token)
    return scenario is not None and scenario.tool_updates


def tool_updates_allowed(*, product: Product, token: ToolToken) -> bool:
    """Whether the token's scenario (if any) lets the model write: toolUpdates, as update_memory reads it."""
    return _may_call(product, token, "update_memory")


def tool_call(*, product: Product, token: ToolToken, name: str, arguments: object) -> dict:
    if name not in TOOLS:
        raise InvalidRequest(f"unknown tool {name!r}; one of {', '.join(TOOLS)}", details={"field": "name"})
    if not _may_call(product, token, name):
        raise Forbidden("this scenario does not let the model call update_memory; the product commits changes")
    arguments = _check_arguments(name, arguments)
    address = ConversationAddress(product, token.user_id, token.conversation_id)
    run_address_checks(product, token.user_id, token.conversation_id)  # e.g. 409 while the user is erased
    if name == "get_memory":
        revision, memory = memory_document_get(address)
        return {"revision": revision, "memory": memory}
    return {"revision": _update(address, token, arguments)}


def _check_arguments(name: str, arguments: object) -> dict:
    schema = TOOLS[name]["function"]["parameters"]
    error = next(iter(Draft202012Validator(schema).iter_errors(arguments)), None)
    if error is not None:
        raise InvalidRequest(f"invalid arguments for {name}: {error.message}", details={"field": argument_field(error)})
    assert isinstance(arguments, dict)  # every tool's parameters schema is an object
    if "expectedRevision" in arguments:  # JSON Schema's integer admits 2.0; the REST endpoint's rule does not
        validate_revision(arguments["expectedRevision"], field="arguments.expectedRevision")
    return arguments


def argument_field(error: ValidationError) -> str:
    """`details.field` of a tool argument outside the tool's schema, the same on /v1/tools/call and /mcp:
    `arguments.<name>` (`arguments.memory`, `arguments.memory.notes`), `arguments` for the object itself."""
    return ".".join(["arguments", *(str(p) for p in error.absolute_path), *_culprit(error)])


def _culprit(error: ValidationError) -> list[str]:
    """The property a `required` or `additionalProperties` error is about (its path stops at the object)."""
    instance = error.instance if isinstance(error.instance, dict) else {}
    if error.validator == "required":
        return [next(p for p in error.validator_value if p not in instance)]
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        return [next(p for p in instance if p not in known)]
    return []


def _update(address: ConversationAddress, token: ToolToken, arguments: dict) -> int:
    scenario = _scenario(address.product, token)
    try:
        return memory_document_replace(
            address=address,
            expected_revision=arguments["expectedRevision"],
            memory=arguments["memory"],
            actor=Actor("tool", token.token_id),
            schema=scenario.memory_schema if scenario else None,
        )
    except RevisionConflict as exc:
        # TOOL2: tell the model to re-read and re-decide; the tool never replays the write itself.
        raise RevisionConflict(
            exc.current, message=f"memory changed (now revision {exc.current}): call get_memory, then decide again"
        ) from None
