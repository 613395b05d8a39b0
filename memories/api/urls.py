from django.urls import path

from . import branches, documents, scenarios, tools, turns

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/memory", documents.MemoryDocumentView.as_view(), name="memory"),
    path(f"{conversation}/memory/revisions", documents.MemoryRevisionListView.as_view(), name="memory-revisions"),
    path("scenarios", scenarios.ScenarioListView.as_view(), name="scenarios"),
    path("scenarios/<str:scenario_id>", scenarios.ScenarioDetailView.as_view(), name="scenario"),
    path("scenarios/<str:scenario_id>/versions", scenarios.ScenarioVersionListView.as_view(), name="scenario-versions"),
    path(f"{conversation}/turns", turns.TurnPrepareView.as_view(), name="turns"),
    path(f"{conversation}/turns/<id:turn_id>", turns.TurnDetailView.as_view(), name="turn"),
    path(f"{conversation}/turns/<id:turn_id>/complete", turns.TurnCompleteView.as_view(), name="turn-complete"),
    path(f"{conversation}/turns/<id:turn_id>/accept", turns.TurnAcceptView.as_view(), name="turn-accept"),
    path(f"{conversation}/turns/<id:turn_id>/select", branches.TurnSelectView.as_view(), name="turn-select"),
    path(f"{conversation}/messages", turns.MessageListView.as_view(), name="messages"),
    path(f"{conversation}/messages/<id:message_id>", branches.MessageDetailView.as_view(), name="message"),
    path(f"{conversation}/messages/<id:message_id>/edit", branches.MessageEditView.as_view(), name="message-edit"),
    path(f"{conversation}/events", turns.EventListView.as_view(), name="events"),
    path(f"{conversation}/tool-tokens", tools.ToolTokenView.as_view(), name="tool-tokens"),
    path("tool-tokens/revoke-all", tools.ToolTokenRevokeAllView.as_view(), name="tool-tokens-revoke-all"),
    path("tool-tokens/<str:token_id>/revoke", tools.ToolTokenRevokeView.as_view(), name="tool-token-revoke"),
    path("tools", tools.ToolListView.as_view(), name="tools"),
    path("tools/call", tools.ToolCallView.as_view(), name="tools-call"),
]
