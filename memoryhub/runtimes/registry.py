"""Runtime name → dotted path, imported lazily; scenario choices and validation read this dict."""
from __future__ import annotations

from functools import lru_cache

from django.utils.module_loading import import_string

RUNTIMES: dict[str, str] = {
    "personalization": "memoryhub.runtimes.personalization.PersonalizationRuntime",
    "axon_go": "memoryhub.runtimes.axon.AxonGoRuntime",
    "axon_shadow": "memoryhub.runtimes.axon.AxonShadowRuntime",
    "hinos": "memories.hinos.runtime.HinosRuntime",
}
DEFAULT_RUNTIME = "personalization"


@lru_cache(maxsize=None)
def get_runtime(name: str):
    return import_string(RUNTIMES[name])()
