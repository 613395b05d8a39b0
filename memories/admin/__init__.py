"""The operator console of the core app: products and keys, JSON memory documents, scenarios and turns."""

from . import documents, runonce, tools, turns  # noqa: F401  each module registers its ModelAdmins
