"""The Hinos runtime (external memory service). Delivered by the Hinos issue; until then turns answer 501."""
from __future__ import annotations

from memoryhub.api.exceptions import NotImplementedYet

from .base import MemoryWrite, Recall, SourceConfig, TurnContext
from .common import PERSONAL_VARIABLES, allowed_variable_errors

HINOS_VARIABLE = "hinosMemory"


class HinosRuntime:
    name = "hinos"
    allowed_variables = PERSONAL_VARIABLES | {HINOS_VARIABLE}

    def validate_sources(self, sources: list[SourceConfig]) -> dict[str, str]:
        errors = allowed_variable_errors(sources, self.allowed_variables, self.name)
        if sum(1 for s in sources if s.variable == HINOS_VARIABLE) != 1:
            errors["memorySources"] = "the hinos runtime needs exactly one source with variable 'hinosMemory'"
        return errors

    def recall(self, context: TurnContext) -> Recall:
        raise NotImplementedYet("the hinos runtime is not implemented yet")

    def commit(self, turn) -> MemoryWrite | None:
        raise NotImplementedYet("the hinos runtime is not implemented yet")
