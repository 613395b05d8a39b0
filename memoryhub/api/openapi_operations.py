"""Every operation's tag, summary and description in the OpenAPI document (memoryhub/api/openapi.py applies them).

An operation whose view sets `extend_schema(description=…)` keeps that description; the table's is used otherwise.
tests/test_contract.py fails for an operation missing here.
"""

from __future__ import annotations

TAGS: dict[str, str] = {
    "memory": "The conversation's JSON memory document: read, compare-and-set replace, revisions.",
    "long-term memories": "A user's long-term memories across conversations: kinds, admission, search, task "
    "checkpoints (docs/long-term-memories.md).",
    "scenarios": "A product's scenarios: which sources a turn recalls and the template it renders.",
    "turns": "One round of a conversation: prepare (recall and render), complete, accept; messages and events.",
    "diaries": "Diary summaries of a conversation (docs/diaries.md).",
    "tables": "Memory tables a model edits with <tableEdit> (docs/tables.md).",
    "state": "Versioned conversation state and its candidates (docs/state.md).",
    "story": "Story world/narrative snapshots settled on confirmed replies (docs/story.md).",
    "history": "A user's past messages searched and imported (docs/history.md), and compact-history summaries of a "
    "conversation (docs/compact.md).",
    "lorebooks": "World Info and Character Card lorebooks: import, export, entries under compare-and-set with "
    "history (docs/roleplay.md#lorebooks).",
    "lifecycle": "Retention, export, import and erasure of a user's data (docs/data-lifecycle.md).",
    "webhooks": "Endpoints that receive signed event deliveries (docs/webhooks.md).",
    "tools": "Tool tokens and the model-facing tools they authenticate (docs/contract.md#tool-tokens, docs/mcp.md).",
    "Hinos": "The Hinos external-memory protocol: prepare and commit (docs/hinos.md).",
    "ops": "Liveness, readiness and metrics for operators (docs/production.md).",
}

_PAGE = " Keyset-paginated: pass `next` back as `cursor` (`limit` 1–200, default 50)."
_TABLE = "One table; PUT replaces its rows iff `expectedVersion` is the stored version (409 otherwise)."
_MEMORY = "409 `revision_conflict` with details.currentVersion when expectedVersion is not the stored version."

# operation id → (tag, summary, description)
OPERATIONS: dict[str, tuple[str, str, str]] = {
    "memory_get": (
        "memory",
        "Read the memory document",
        'The current revision and document; a conversation with nothing stored reads {"revision": 0, "memory": null}.',
    ),
    "memory_replace": (
        "memory",
        "Replace the memory document",
        "A full replacement, committed only if `expectedRevision` is the stored revision (one conditional UPDATE): "
        "answers the new revision, expectedRevision + 1. A loser gets 409 revision_conflict with "
        "details.currentRevision: re-read and decide again. At most 65,536 bytes (413 memory_too_large, "
        "details.bytes and details.limit) and depth 32; a memory that is not an object, or is nested deeper, is "
        "400 invalid_memory with details.field `memory` (and details.depth and details.limit for the depth); a "
        "body nested deeper than 512 levels (a memory of depth 512 or more) is 400 invalid_request with "
        "details.depth and details.limit 512. "
        "A document failing the product's JSON Schema is 422 rejected_by_policy with details.path.",
    ),
    "memory_revisions": ("memory", "List the document's revisions", "Every committed revision, newest first." + _PAGE),
    "scenarios_list": ("scenarios", "List scenarios", "The product's scenarios." + _PAGE),
    "scenarios_create": (
        "scenarios",
        "Create a scenario",
        "Validated as the admin validates it (400 naming the field); 409 when the id exists.",
    ),
    "scenarios_get": ("scenarios", "Read a scenario", "One scenario with its current version."),
    "scenarios_replace": (
        "scenarios",
        "Replace a scenario",
        "Replaces the whole scenario; every change is a new version (…/versions).",
    ),
    "scenarios_patch": ("scenarios", "Change a scenario", "Changes the fields sent; the others stay."),
    "scenarios_delete": ("scenarios", "Delete a scenario", "Removes the scenario (404 when there is none)."),
    "scenarios_versions": (
        "scenarios",
        "List a scenario's versions",
        "Every version, newest first, with the snapshot and who made it." + _PAGE,
    ),
    "turns_prepare": ("turns", "Prepare a turn", "Recall every source and render the scenario's template."),
    "turns_get": (
        "turns",
        "Read a turn",
        "The turn as prepared (prompt, variables, sources), its completion state and the runtime's state.",
    ),
    "turns_complete": (
        "turns",
        "Complete a turn",
        "Record the assistant's reply; memory writes follow the scenario's commitOn. The same reply again "
        "answers the turn as it stands (a retry, nothing done twice); another reply is 409 "
        "turn_already_completed.",
    ),
    "turns_accept": (
        "turns",
        "Accept a turn",
        "The user accepted the reply: writes waiting for acceptance (commitOn: accepted) run now (409 "
        "turn_not_acceptable before completion).",
    ),
    "turns_select": (
        "turns",
        "Swipe back to a reply",
        "The turn (a superseded reply of its round) becomes the current reply: the current one is superseded and its "
        "derived writes rolled back, then this turn's are written again (docs/roleplay.md#swipes-and-rollback).",
    ),
    "messages_edit": (
        "turns",
        "Edit a message",
        "A new turn of the same round replaces the message's turn; the old turn's derived writes are rolled back "
        "and the edited reply's applied (docs/roleplay.md#editing-and-deleting-messages).",
    ),
    "messages_delete": (
        "turns",
        "Delete a message",
        "Supersedes the message's turn with no replacement (kept, marked deleted); its derived writes are rolled "
        "back. Deleting the user message removes its reply too (docs/roleplay.md#editing-and-deleting-messages).",
    ),
    "messages_list": ("turns", "List messages", "The conversation's messages, oldest first." + _PAGE),
    "events_list": (
        "turns",
        "List events",
        "The conversation's events (turn.prepared, turn.completed, memory writes, …), optionally of one `type`."
        + _PAGE,
    ),
    "tool_tokens_create": (
        "tools",
        "Mint a tool token",
        "A short-lived token bound to this user and conversation (and optionally a scenario), shown once. It "
        "authenticates /v1/tools, /v1/tools/call and /mcp while neither it nor the minting key is revoked.",
    ),
    "tool_tokens_revoke": (
        "tools",
        "Revoke a tool token",
        "Revoking again changes nothing; 404 for another product's id.",
    ),
    "tool_tokens_revoke_all": ("tools", "Revoke every tool token", "Revokes every live token of the product."),
    "tools_list": (
        "tools",
        "List the tools",
        "The tools a model may call with this token (or, with a product key, every tool): name, description and "
        "the JSON Schema of the arguments.",
    ),
    "tools_call": (
        "tools",
        "Call a tool",
        "Runs one tool for the token's user and conversation: the token alone decides whose memory is read or "
        "written, never the arguments. `details` is the tool's result, the shapes of seed 000's tools: get_memory "
        "(arguments {}) → {revision, memory}, revision 0 and memory null when nothing is stored; update_memory "
        "(arguments {expectedRevision, memory}, a full replacement) → {revision}, the new revision. Errors are the "
        "envelope: 400 invalid_request for an unknown tool (details.field `name`) or invalid arguments "
        "(details.field `arguments.…`), 400 invalid_memory / 413 memory_too_large as for PUT …/memory, 409 "
        "revision_conflict with details.currentRevision (call get_memory and decide again; never replay the "
        "write), 403 forbidden when the token's scenario has toolUpdates off, 401 for a product key or an "
        "expired or revoked token, 409 erasure_in_progress while the user is erased. docs/contract.md#tool-tokens",
    ),
    "memory_kinds_list": (
        "long-term memories",
        "List memory kinds",
        "The product's kinds (the built-in `preference` aside).",
    ),
    "memory_kinds_create": (
        "long-term memories",
        "Define a memory kind",
        "A kind the product's long-term memories may have: its scope, admission and whether it is searchable.",
    ),
    "memory_kinds_get": ("long-term memories", "Read a memory kind", "One memory kind of the product."),
    "memory_kinds_update": ("long-term memories", "Change a memory kind", "Changes the fields sent."),
    "memory_kinds_delete": (
        "long-term memories",
        "Delete a memory kind",
        "409 `kind_in_use` while memories of the kind exist, unless ?cascade=true.",
    ),
    "memories_list": ("long-term memories", "List a user's memories", "Newest first, optionally of one kind." + _PAGE),
    "memories_create": (
        "long-term memories",
        "Create a long-term memory",
        "Admission rules apply (422 rejected_by_policy with details.reason); a retried operationId answers the "
        "first result (Operation-Replayed: true).",
    ),
    "memories_get": ("long-term memories", "Read a memory", "One memory with its version."),
    "memories_update": ("long-term memories", "Update a memory", "Compare-and-set on `expectedVersion`. " + _MEMORY),
    "memories_delete": ("long-term memories", "Delete a memory", "Optionally compare-and-set (?expectedVersion). "),
    "memories_search": (
        "long-term memories",
        "Search memories",
        "Keyword, semantic or hybrid search over the user's searchable memories. `mode` is required, with no "
        "default: `keyword` (BM25), `semantic` (cosine) or `hybrid` (both rankings fused; docs/recall.md); it is "
        "echoed. `limit` 1–50 (default 10); `minScore` floors the semantic cosine (hybrid defaults to "
        "SEARCH_MIN_SCORE, unset the floor measured for the configured embedder: 0.15 for the bundled default); "
        "`next` goes back as `cursor` with the same query, mode and floor.",
    ),
    "tasks_get": (
        "long-term memories",
        "Read a task",
        "A task with its committed stages in commit order and its report: what a resuming client needs.",
    ),
    "tasks_checkpoint": (
        "long-term memories",
        "Commit a task stage",
        "Commit one stage of a task, once: 201 when this request (or the operation it replays, with "
        "Operation-Replayed: true) committed it, 200 with the stored stage when it was committed before.",
    ),
    "tasks_report": (
        "long-term memories",
        "Publish a task report",
        "Publish a task's final report atomically, once: 201 when this request (or the operation it replays) "
        "published it, 200 with the stored report when it was published before.",
    ),
    "diaries_list": (
        "diaries",
        "List diary entries",
        "Diary entries of a conversation, newest first unless `order=oldest`." + _PAGE,
    ),
    "tables_list": (
        "tables",
        "List tables",
        'The conversation\'s tables and their rendered `memoryTable` text ({"tables": []} before first use).',
    ),
    "table_get": ("tables", "Read a table", _TABLE),
    "table_replace": ("tables", "Replace a table's rows", _TABLE),
    "table_versions": (
        "tables",
        "List a table's versions",
        "Every committed version of a table, newest first, with what caused it." + _PAGE,
    ),
    "state_get": (
        "state",
        "Read the state",
        "A projection of the state: `actor` (actor categories only, no text) or `background` (everything).",
    ),
    "state_candidates_submit": (
        "state",
        "Submit a state candidate",
        'Validate, version-check and commit a state candidate → {"revision": n + 1}.',
    ),
    "state_revisions": (
        "state",
        "List state revisions",
        "Every committed revision, newest first, with what it changed and who committed it." + _PAGE,
    ),
    "story_get": ("story", "Read the story", "The current snapshot (version 0, empty, when never settled)."),
    "story_settle": (
        "story",
        "Settle the story",
        "Settle the story on a confirmed reply: version + 1, events carry the anchor.",
    ),
    "story_versions": (
        "story",
        "List story versions",
        "Every version, newest first: settlements and rollbacks; `rolledBack` marks versions a rollback discarded."
        + _PAGE,
    ),
    "history_search": (
        "history",
        "Search a user's past messages",
        "Every message of every conversation of the user, ranked by `mode` (hybrid, keyword or semantic), best first, "
        "each hit with `why`; superseded messages are never returned. In hybrid a message that shares no word with "
        "the query and whose cosine is below the floor (`minScore`) is returned only as a kept hit's neighbour, so "
        "an unrelated query can find nothing (docs/history.md).",
    ),
    "history_status": (
        "history",
        "History index status",
        "How many of the user's messages are indexed and how many still wait for their vector (docs/history.md).",
    ),
    "messages_import": (
        "history",
        "Import past messages",
        "1 to 1,000 past messages of a conversation with their original times, in order (400 otherwise); "
        "idempotent by `clientId`, 1–128 printable characters kept as sent (a space at either end is 400, never "
        "trimmed; the same id with another role, name, content or time, or twice in one request, is 422 "
        "client_id_conflict and nothing is stored). They are then searchable and recallable (docs/history.md).",
    ),
    "compactions_list": ("history", "List compact-history summaries", "The conversation's summaries." + _PAGE),
    "lorebooks_list": ("lorebooks", "List lorebooks", "The product's lorebooks, without their entries." + _PAGE),
    "lorebooks_import": (
        "lorebooks",
        "Import a lorebook",
        "A World Info file or a Character Card V2/V3's character_book: 201 with its entries; a bad file is 400 "
        "naming the field and creates nothing, an id in use 409 lorebook_exists.",
    ),
    "lorebooks_get": ("lorebooks", "Read a lorebook", "One lorebook with its live entries."),
    "lorebooks_delete": ("lorebooks", "Delete a lorebook", "Removes the lorebook and its entries (404 when none)."),
    "lorebooks_export": (
        "lorebooks",
        "Export a lorebook",
        "The file: in the imported format the imported file field for field plus the edits; in the other format "
        "the entries converted as SillyTavern converts them.",
    ),
    "lorebook_entries_list": ("lorebooks", "List a lorebook's entries", "Every live entry: `native` and `entry`."),
    "lorebook_entries_create": (
        "lorebooks",
        "Create an entry",
        "A new entry from World Info view fields, at revision 1 (uid: the next free integer unless given).",
    ),
    "lorebook_entries_get": ("lorebooks", "Read an entry", "One live entry: as stored (`native`) and its view."),
    "lorebook_entries_edit": (
        "lorebooks",
        "Edit an entry",
        "Changes the view fields sent, written where the format keeps them, iff `expectedRevision` is the stored "
        "revision: 200 at revision + 1, else 409 revision_conflict with details.currentRevision.",
    ),
    "lorebook_entries_delete": (
        "lorebooks",
        "Delete an entry",
        "Removes the entry from export and recall iff `expectedRevision` is the stored revision (409 otherwise); "
        "its history stays.",
    ),
    "lorebook_entry_versions": (
        "lorebooks",
        "List an entry's revisions",
        "Every revision, newest first, with its cause and actor; a deleted entry's too." + _PAGE,
    ),
    "lorebook_proposals_list": (
        "lorebooks",
        "List entry proposals",
        "The lorebook's proposed entry edits, newest first; `?status=pending|accepted|rejected` narrows them." + _PAGE,
    ),
    "lorebook_proposals_submit": (
        "lorebooks",
        "Propose an entry edit",
        "A model's (or anyone's) edit of one entry, stored pending and committed only when accepted: the fields "
        "are checked as an edit's (400), `baseRevision` must be the entry's revision (409 revision_conflict).",
    ),
    "lorebook_proposals_get": ("lorebooks", "Read an entry proposal", "One proposal with its decision."),
    "lorebook_proposals_accept": (
        "lorebooks",
        "Accept an entry proposal",
        "Commits the proposal on its base revision under compare-and-set (a new revision with cause `proposal`); "
        "an entry changed since is 409 revision_conflict and the proposal stays pending; a decided one is 409 "
        "proposal_decided.",
    ),
    "lorebook_proposals_reject": (
        "lorebooks",
        "Reject an entry proposal",
        "Marks a pending proposal rejected, with an optional note; the entry is not touched.",
    ),
    "product_get": ("lifecycle", "Read the product", "The calling product and its retention settings."),
    "product_update": ("lifecycle", "Change retention", "Change the product's retention settings."),
    "users_export": ("lifecycle", "Export a user", "Start an export of everything memoryhub keeps about the user."),
    "exports_get": ("lifecycle", "Read an export", "An export's status."),
    "exports_download": ("lifecycle", "Download an export", "The export file (gzip JSON Lines)."),
    "users_import": ("lifecycle", "Import into a user", "Restore an export file into this user."),
    "imports_get": ("lifecycle", "Read an import", "An import's status and report."),
    "users_erase": ("lifecycle", "Erase a user", "Erase everything memoryhub keeps about the user."),
    "conversations_erase": ("lifecycle", "Erase a conversation", "Erase one conversation of a user."),
    "erasures_get": ("lifecycle", "Read an erasure", "An erasure's status."),
    "webhooks_list": ("webhooks", "List webhook endpoints", "The product's endpoints." + _PAGE),
    "webhooks_create": ("webhooks", "Register a webhook endpoint", "Register an endpoint."),
    "webhooks_get": ("webhooks", "Read a webhook endpoint", "One endpoint (never its secret)."),
    "webhooks_patch": ("webhooks", "Change a webhook endpoint", "Change an endpoint."),
    "webhooks_delete": ("webhooks", "Delete a webhook endpoint", "Removes the endpoint."),
    "webhooks_rotate_secret": ("webhooks", "Rotate a signing secret", "A new secret."),
    "webhooks_deliveries": ("webhooks", "List deliveries", "The endpoint's deliveries." + _PAGE),
    "webhooks_redeliver": ("webhooks", "Redeliver", "Send a delivery again."),
    "hinos_memory_prepare": (
        "Hinos",
        "Prepare memory for a turn",
        "Hinos prepare: the rendered system message and the chat (last message the current user's) in; a "
        "claim_id and the `memory` text for this turn out.",
    ),
    "hinos_memory_commit": (
        "Hinos",
        "Commit a turn's input and reply",
        "Hinos commit: the same claim_id with this turn's user input and assistant reply; answers committed: true.",
    ),
    "healthz": ("ops", "Liveness", "200 while the process serves requests; checks no dependency."),
    "readyz": (
        "ops",
        "Readiness",
        "Checks the database, Redis (when configured) and the broker (unless Celery runs eagerly): 200 with each "
        "dependency's state, or 503 storage_unavailable with details.dependencies.",
    ),
    "metrics": (
        "ops",
        "Prometheus metrics",
        "Prometheus text format; needs METRICS_TOKEN as a bearer token or a peer in METRICS_ALLOWED_NETWORKS (401).",
    ),
}
