from django.urls import path

from . import views_documents, views_scenarios, views_tools, views_turns

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/memory", views_documents.MemoryDocumentView.as_view(), name="memory"),
    path(f"{conversation}/memory/revisions", views_documents.MemoryRevisionListView.as_view(), name="memory-revisions"),
    path("scenarios", views_scenarios.ScenarioListView.as_view(), name="scenarios"),
    path("scenarios/<str:scenario_id>", views_scenarios.ScenarioDetailView.as_view(), name="scenario"),
    path("scenarios/<str:scenario_id>/versions", views_scenarios.ScenarioVersionListView.as_view(), name="scenario-versions"),
    path(f"{conversation}/turns", views_turns.TurnPrepareView.as_view(), name="turns"),
    path(f"{conversation}/turns/<int:turn_id>", views_turns.TurnDetailView.as_view(), name="turn"),
    path(f"{conversation}/turns/<int:turn_id>/complete", views_turns.TurnCompleteView.as_view(), name="turn-complete"),
    path(f"{conversation}/turns/<int:turn_id>/accept", views_turns.TurnAcceptView.as_view(), name="turn-accept"),
    path(f"{conversation}/messages", views_turns.MessageListView.as_view(), name="messages"),
    path(f"{conversation}/events", views_turns.EventListView.as_view(), name="events"),
    path(f"{conversation}/tool-tokens", views_tools.ToolTokenView.as_view(), name="tool-tokens"),
    path("tools", views_tools.ToolListView.as_view(), name="tools"),
    path("tools/call", views_tools.ToolCallView.as_view(), name="tools-call"),
]
