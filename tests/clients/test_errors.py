import pickle

import pytest

from memoryhub.clients.errors import DependencyUnavailable, UpstreamProtocolError, UpstreamTimeout


@pytest.mark.parametrize("cls", [UpstreamTimeout, UpstreamProtocolError, DependencyUnavailable])
def test_upstream_errors_survive_pickling_as_celery_stores_them(cls):
    error = pickle.loads(pickle.dumps(cls("hinos timed out", service="hinos", details={"status": 504})))
    assert type(error) is cls
    assert (error.message, error.service, error.details) == (
        "hinos timed out",
        "hinos",
        {"service": "hinos", "status": 504},
    )
    assert str(error) == "hinos timed out"
