"""Counting a test's round trips to Redis."""

from __future__ import annotations


def redis_trips(monkeypatch) -> list[str]:
    """Every round trip to Redis from now on: a command's name, or a pipeline's commands."""
    import redis.client

    trips: list[str] = []
    command, execute = redis.client.Redis.execute_command, redis.client.Pipeline.execute

    def counting_command(self, *args, **kwargs):
        trips.append(str(args[0]))
        return command(self, *args, **kwargs)

    def counting_execute(self, *args, **kwargs):
        trips.append("pipeline " + " ".join(str(c[0][0]) for c in self.command_stack))
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(redis.client.Redis, "execute_command", counting_command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", counting_execute)
    return trips
