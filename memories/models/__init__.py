from .documents import MemoryDocument, MemoryRevision
from .products import ApiKey, Product
from .scenarios import MemorySource, Scenario, ScenarioVersion
from .turns import Conversation, Event, Message, Turn
from .runonce import IdempotencyRecord, MemoryOperation

__all__ = [
    "ApiKey",
    "Conversation",
    "Event",
    "IdempotencyRecord",
    "MemoryDocument",
    "MemoryOperation",
    "MemoryRevision",
    "MemorySource",
    "Message",
    "Product",
    "Scenario",
    "ScenarioVersion",
    "Turn",
]
