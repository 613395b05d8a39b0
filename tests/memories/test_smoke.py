def test_read_write_read(alice):
    url = "/v1/users/u1/conversations/c1/memory"
    assert alice.get(url).json() == {"revision": 0, "memory": None}
    assert alice.put(url, {"expectedRevision": 0, "memory": {"a": 1}}).json() == {"revision": 1}
    assert alice.get(url).json() == {"revision": 1, "memory": {"a": 1}}
    assert alice.put(url, {"expectedRevision": 0, "memory": {"a": 2}}).status_code == 409
