from __future__ import annotations

from django.apps import AppConfig


class McpConfig(AppConfig):
    """MCP server (docs/mcp.md): the model-facing tools over the Model Context Protocol, under tool tokens."""

    name = "memories.mcp"
    label = "mcp"
    verbose_name = "MCP"
