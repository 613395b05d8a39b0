"""A bundled model built once per process, on first use."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LoadedOnce(Generic[T]):
    """`get()` builds the value on first use (one thread builds, the others wait) and keeps it; `seconds` is how
    long the build took (None before it)."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: T | None = None
        self.seconds: float | None = None

    def get(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    started = time.perf_counter()
                    self._value = self._build()
                    self.seconds = time.perf_counter() - started
                value = self._value
        return value
