"""Every error kind — ours, Django's and DRF's own — answers the one envelope, never a 500."""

from __future__ import annotations

import base64
import json

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from memories.services.products import api_key_create, api_key_revoke
from tests.support.api import assert_envelope

URL = "/v1/users/u1/conversations/c1/memory"


def _raw_put(api, body: bytes | str, content_type: str = "application/json", **extra):
    return api.client.generic("PUT", URL, body, content_type=content_type, **extra)


def test_unknown_url_is_404_envelope(alice):
    assert_envelope(alice.get("/v1/no-such-thing"), 404, "not_found")


def test_unknown_url_without_a_key_is_404_envelope(db):
    assert_envelope(APIClient().get("/nowhere/at/all"), 404, "not_found")


def test_trailing_slash_is_404_envelope_not_a_redirect(alice):
    assert_envelope(alice.get(URL + "/"), 404, "not_found")


def test_wrong_method_is_405_envelope(alice):
    error = assert_envelope(alice.post(URL, {"expectedRevision": 0, "memory": {}}), 405, "method_not_allowed")
    assert "POST" in error["message"]


def test_delete_on_memory_is_405_envelope(alice):
    assert_envelope(alice.delete(URL), 405, "method_not_allowed")


def test_malformed_json_is_400_envelope(alice):
    assert_envelope(_raw_put(alice, '{"expectedRevision": 0, "memory": {'), 400, "invalid_request")


def test_body_that_is_not_utf8_is_400_envelope(alice):
    assert_envelope(_raw_put(alice, b'{"memory": "\xff\xfe"}'), 400, "invalid_request")


def test_empty_body_is_400_envelope(alice):
    assert_envelope(_raw_put(alice, b""), 400, "invalid_request")


def test_body_that_is_not_an_object_is_400_envelope(alice):
    assert_envelope(_raw_put(alice, "[1, 2]"), 400, "invalid_request")


def test_wrong_content_type_is_415_envelope(alice):
    body = "expectedRevision=0&memory=x"
    assert_envelope(_raw_put(alice, body, "application/x-www-form-urlencoded"), 415, "unsupported_media_type")


def test_text_plain_is_415_envelope(alice):
    assert_envelope(
        _raw_put(alice, '{"expectedRevision": 0, "memory": {}}', "text/plain"), 415, "unsupported_media_type"
    )


def test_missing_key_is_401_envelope(db):
    response = APIClient().get(URL)
    assert_envelope(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"] == "Bearer"


def test_unknown_key_is_401_envelope(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer mhk_000000000000_not-a-real-key")
    assert_envelope(client.get(URL), 401, "unauthenticated")


def test_key_with_right_prefix_and_wrong_secret_is_401_envelope(alice):
    forged = alice.key[: alice.key.rindex("_") + 1] + "x" * 43
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {forged}")
    assert_envelope(client.get(URL), 401, "unauthenticated")


@pytest.mark.parametrize("header", ["Bearer", "Bearer a b", "Basic dXNlcjpwYXNz", "Token abc"])
def test_malformed_authorization_header_is_401_envelope(alice, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_envelope(client.get(URL), 401, "unauthenticated")


def test_revoked_key_is_401_envelope(alice):
    issued = api_key_create(product=alice.product, name="second")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get(URL).status_code == 200
    api_key_revoke(api_key=issued.api_key)
    assert_envelope(client.get(URL), 401, "unauthenticated")
    assert alice.get(URL).status_code == 200  # the product's other key still works


def test_hugely_nested_json_body_is_400_not_500(alice):
    error = assert_envelope(_raw_put(alice, "[" * 100_000), 400, "invalid_request")
    assert error["message"] == "JSON nested too deeply" and error["details"] == {"depth": 100_000, "limit": 512}


def test_hugely_nested_json_object_body_is_400_not_500(alice):
    body = '{"a":' * 100_000 + "1" + "}" * 100_000
    error = assert_envelope(_raw_put(alice, body), 400, "invalid_request")
    assert error["details"] == {"depth": 100_000, "limit": 512}


def _deep_memory_body(depth: int) -> str:
    """A PUT body whose memory is `depth` levels deep: the body itself is one level more."""
    return '{"expectedRevision": 0, "memory": {"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}}"


@pytest.mark.parametrize("idempotency_key", [None, "deep"])
def test_a_body_deeper_than_512_levels_is_refused_the_same_way_at_every_depth(alice, idempotency_key):
    """docs/contract.md: one fixed limit, below where the interpreter's recursion gives out (~900 levels,
    depending on the stack at which the body is parsed); every depth stays a 400 with the same details."""
    extra = {"HTTP_IDEMPOTENCY_KEY": idempotency_key} if idempotency_key else {}
    deepest = assert_envelope(_raw_put(alice, _deep_memory_body(511), **extra), 400, "invalid_memory")
    assert deepest["details"] == {"field": "memory", "depth": 511, "limit": 32}
    for depth in (512, 513, *range(800, 1001, 8), 5000):
        error = assert_envelope(_raw_put(alice, _deep_memory_body(depth), **extra), 400, "invalid_request")
        assert error["details"] == {"depth": depth + 1, "limit": 512}, depth
    assert alice.get(URL).json() == {"revision": 0, "memory": None}


def test_brackets_inside_strings_do_not_count_as_nesting(alice):
    memory = {"text": "[" * 600 + '\\"{' * 300, "list": [[1]] * 600}
    body = json.dumps({"expectedRevision": 0, "memory": memory})
    assert _raw_put(alice, body).status_code == 200


def test_body_larger_than_the_upload_limit_is_413_envelope(alice):
    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024
    body = json.dumps({"expectedRevision": 0, "memory": {"blob": "x" * size}})
    assert_envelope(_raw_put(alice, body), 413)
    assert alice.get(URL).json() == {"revision": 0, "memory": None}


def test_body_larger_than_the_upload_limit_is_413_whatever_its_fields(alice):
    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024
    body = json.dumps({"expectedRevision": 0, "memory": {}, "padding": "x" * size})
    assert_envelope(_raw_put(alice, body), 413, "request_too_large")


def test_validation_error_names_the_field(alice):
    error = assert_envelope(alice.put(URL, {"expectedRevision": "1", "memory": {}}), 400, "invalid_request")
    assert "expectedRevision" in error["details"]["fields"]


def test_errors_are_json_content_type(alice):
    for response in (alice.get("/v1/nothing"), alice.post(URL, {}), _raw_put(alice, "{")):
        assert response["Content-Type"].startswith("application/json")


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "query",
    [
        {"cursor": _cursor(b"[" * 3000)},  # fits a 4 KB request line, nests past the recursion limit
        {"cursor": _cursor(b"\xff\xfe")},
        {"cursor": _cursor(b"1e999")},
        {"cursor": _cursor(b"true")},
        {"cursor": "%FF"},
        {"limit": "99999999999999999999999"},
        {"limit": "\x00"},
    ],
)
def test_forged_pagination_parameters_are_400_not_500(alice, query):
    assert_envelope(alice.get(URL + "/revisions", data=query), 400, "invalid_request")


@pytest.mark.parametrize("cursor, expected", [(-1, []), (0, []), (2, [1]), (2**63, [1]), (10**30, [1])])
def test_out_of_range_integer_cursor_pages_from_there_never_500(alice, cursor, expected):
    alice.put(URL, {"expectedRevision": 0, "memory": {}})
    response = alice.get(URL + "/revisions", data={"cursor": _cursor(str(cursor).encode())})
    assert response.status_code == 200, response.content
    assert [row["revision"] for row in response.json()["results"]] == expected


@pytest.mark.parametrize("path", ["/v1/users/%FF/conversations/c1/memory", "/v1/users/%00/conversations/c1/memory"])
def test_undecodable_or_control_bytes_in_ids_are_400(alice, path):
    assert_envelope(alice.get(path), 400)


def test_an_unknown_field_and_a_missing_one_are_reported_together(alice):
    """`revision` (what GET answers) sent for `expectedRevision`: both the wrong name and the missing one."""
    error = assert_envelope(alice.put(URL, {"revision": 1, "memory": {}}), 400, "invalid_request")
    assert set(error["details"]["fields"]) == {"revision", "expectedRevision"}, error
    assert alice.get(URL).json() == {"revision": 0, "memory": None}
