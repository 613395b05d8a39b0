from .documents import MemoryDocument, MemoryRevision
from .products import ApiKey, Product
from .runonce import RunOnceRecord
from .scenarios import MemorySource, Scenario, ScenarioVersion
from .tools import IssuedToolToken
from .turns import Conversation, Event, Message, Turn

__all__ = [
    "ApiKey",
    "Conversation",
    "Event",
    "IssuedToolToken",
    "MemoryDocument",
    "MemoryRevision",
    "MemorySource",
    "Message",
    "Product",
    "RunOnceRecord",
    "Scenario",
    "ScenarioVersion",
    "Turn",
]
