"""The layering rules of docs/architecture.md, checked on the import graph so a change cannot quietly break them.

- `memoryhub/` is the core: it imports no app (apps plug in through registries), except urls.py and settings.py.
- HTTP stays at the edge: only `api` packages/modules and `urls` modules import DRF or an `api` module.
- Domain errors import nothing from DRF; no app holds more than ~30 % of the product code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps as django_apps

ROOT = Path(__file__).resolve().parent.parent
PRODUCT_PACKAGES = ("memoryhub", "memories", "diaries", "tables")
APPS = ("memories", "diaries", "tables")  # memories.longterm and memories.hinos are apps inside memories
CORE_MAY_IMPORT_APPS = {"memoryhub.urls", "memoryhub.settings"}
HTTP_LIBRARIES = ("rest_framework", "drf_spectacular")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _product_modules() -> dict[str, Path]:
    modules = {}
    for package in PRODUCT_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                modules[_module_name(path)] = path
    return modules


def _imports(module: str, path: Path) -> set[str]:
    """Every module this file imports, at any depth (function-level imports count too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


GRAPH = {name: _imports(name, path) for name, path in _product_modules().items()}


def _is_edge(module: str) -> bool:
    parts = module.split(".")
    return "api" in parts or parts[-1] == "urls"


def _is_app(module: str) -> bool:
    return module.split(".")[0] in APPS


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_graph_covers_the_product() -> None:
    assert {"memoryhub.errors", "memories.services.turns", "memories.longterm.models", "tables.parsing"} <= set(GRAPH)


def test_the_core_imports_no_app() -> None:
    offenders = {
        module: sorted(name for name in imported if _is_app(name))
        for module, imported in GRAPH.items()
        if module.startswith("memoryhub") and module not in CORE_MAY_IMPORT_APPS
    }
    assert {m: names for m, names in offenders.items() if names} == {}


def test_only_the_edge_speaks_http() -> None:
    offenders = {
        module: sorted(n for n in imported if _within(n, HTTP_LIBRARIES) or (n in GRAPH and _is_edge(n)))
        for module, imported in GRAPH.items()
        if not _is_edge(module)
    }
    assert {m: names for m, names in offenders.items() if names} == {}


@pytest.mark.parametrize("layer", ["models", "services", "selectors"])
def test_domain_layers_exist_and_stay_below_the_edge(layer: str) -> None:
    members = [m for m in GRAPH if layer in m.split(".")]
    assert members, f"no {layer} modules found: the layout changed, update this test and docs/architecture.md"
    assert not [m for m in members if _is_edge(m)]


def test_domain_errors_know_nothing_of_http() -> None:
    assert not [n for n in GRAPH["memoryhub.errors"] if _within(n, HTTP_LIBRARIES) or n.startswith("django")]


def _lines(paths: list[Path]) -> int:
    return sum(len(p.read_text().splitlines()) for p in paths)


def test_no_app_holds_more_than_about_thirty_percent_of_the_code() -> None:
    modules = _product_modules()
    nested = (
        "memories.longterm",
        "memories.hinos",
        "memories.compact",
        "memories.state",
        "memories.story",
        "memories.lifecycle",
        "memories.console",
        "memories.mcp",
        "memories.webhooks",
    )
    owners = {module: next((n for n in nested if _within(module, (n,))), module.split(".")[0]) for module in modules}
    total = _lines(list(modules.values()))
    shares = {
        owner: _lines([modules[m] for m, o in owners.items() if o == owner]) / total for owner in set(owners.values())
    }
    assert max(shares.values()) <= 0.33, shares


def test_the_transient_errors_are_defined_once_and_every_job_retries_them_through_one_policy() -> None:
    """memoryhub/transient.py is the one list and memoryhub/turn_jobs.py the one place a job's errors are retried;
    a task with its own copy or its own autoretry drifts (tables had a copy, compaction retried no blips)."""
    from memoryhub.celery import app

    drivers = {"redis.exceptions.ConnectionError", "django_redis.exceptions.ConnectionInterrupted"}
    copies = sorted(m for m, imported in GRAPH.items() if imported & drivers and m != "memoryhub.transient")
    assert copies in ([], ["memoryhub.api.handler", "memoryhub.runtimes.common"]), copies  # they map, not retry
    own_retries = sorted(name for name, task in app.tasks.items() if getattr(task, "autoretry_for", None))
    assert own_retries == [], own_retries


# The modules that write outbox rows themselves: the job registry, and the lifecycle/history jobs that are not work
# after a turn (an erasure, an export, an import, message embeddings follow their own rows).
OUTBOX_WRITERS = {
    "memoryhub.turn_jobs",
    "memories.lifecycle.services.erasure",
    "memories.lifecycle.services.export",
    "memories.lifecycle.services.imports",
    "memories.history.services.indexing",
}


def _calls(path: Path) -> set[str]:
    """The names a module calls: `f(…)` as "f", `x.f(…)` as "x.f" and "f"."""
    called: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called.add(node.func.attr)
            if isinstance(node.func.value, ast.Name):
                called.add(f"{node.func.value.id}.{node.func.attr}")
    return called


def test_work_after_a_turn_is_scheduled_only_through_the_job_registry() -> None:
    """No module but memoryhub/turn_jobs.py writes a job's outbox row or sends a task itself (the webhook sweep
    called `deliver.delay`; the diary, table, compaction and audit hooks each wrote their own rows)."""
    modules = _product_modules()
    writers = sorted(m for m, path in modules.items() if {"outbox.schedule", "outbox_schedule"} & _calls(path))
    assert writers == sorted(OUTBOX_WRITERS | {"memoryhub.outbox"}), writers  # memoryhub.outbox: the contract
    senders = sorted(m for m, path in modules.items() if {"delay", "apply_async", "send_task"} & _calls(path))
    assert senders == ["memoryhub.outbox.services"], senders


def test_the_subscription_categories_are_defined_once() -> None:
    """memoryhub/runtimes/base.py names the plans; every other module reads SUBSCRIPTION_CATEGORIES."""
    naming = sorted(
        module
        for module, path in _product_modules().items()
        if any(isinstance(n, ast.Constant) and n.value == "ultra" for n in ast.walk(ast.parse(path.read_text())))
    )
    assert naming == ["memoryhub.runtimes.base"], naming


def test_one_chat_completions_client_for_the_judge_and_the_summariser() -> None:
    from memoryhub.clients.chat import ChatCompletionsClient
    from memoryhub.clients.judge import JudgeClient
    from memoryhub.clients.summarizer import SummarizerClient

    speaking = sorted(m for m, imported in GRAPH.items() if "memoryhub.clients.http.post_json" in imported)
    assert "memoryhub.clients.judge" not in speaking and "memoryhub.clients.summarizer" not in speaking, speaking
    for client in (JudgeClient("http://127.0.0.1:9/v1", "m"), SummarizerClient("http://127.0.0.1:9/v1", "m")):
        assert type(client).complete is ChatCompletionsClient.complete
    assert (JudgeClient("http://x/v1", "m").service, SummarizerClient("http://x/v1", "m").service) == (
        "admission_judge",
        "summarizer",
    )


def test_recall_requests_carry_their_conversation_address() -> None:
    """A producer reads `request.address`; rebuilding it from request.product/user_id/conversation_id drifts."""
    rebuilt = []
    for module, path in _product_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "ConversationAddress"
                and node.args
                and isinstance(node.args[0], ast.Attribute)
                and isinstance(node.args[0].value, ast.Name)
                and node.args[0].value.id == "request"
                and node.args[0].attr == "product"
            ):
                rebuilt.append(f"{module}:{node.lineno}")
    assert rebuilt == [], rebuilt


# Apps that live inside another app's package (memories.longterm, memories.history, …): every installed one, so a
# new nested app is its own node in the cycle check without being listed here.
NESTED_APPS = tuple(
    sorted(
        (config.name for config in django_apps.get_app_configs() if config.name.startswith(("memories.",))),
        key=len,
        reverse=True,
    )
)


def _app_of(module: str) -> str:
    return next((n for n in NESTED_APPS if _within(module, (n,))), module.split(".")[0])


def test_no_import_cycle_between_apps() -> None:
    """An app that imports another is never imported back by it (memories↔diaries, memories↔console and
    console↔hinos were such pairs): the owner of a thing is the app the others import it from."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, imported in GRAPH.items():
        for target in imported:
            if target.split(".")[0] not in APPS:
                continue
            source_app, target_app = _app_of(module), _app_of(target)
            if source_app != target_app and _is_app(module):
                edges.setdefault((source_app, target_app), []).append(f"{module} -> {target}")
    follows: dict[str, set[str]] = {}
    for source_app, target_app in edges:
        follows.setdefault(source_app, set()).add(target_app)

    # Any cycle, of two apps or more: an edge whose target reaches back to its source.
    cycles = {pair: examples[:2] for pair, examples in edges.items() if pair[0] in _reachable(follows, pair[1])}
    assert cycles == {}, cycles


# --- the edge plan (memoryhub/api/plan.py): state reaches a view in one typed object, never by name ------------

_REQUEST_OR_VIEW = {"request", "view", "http_request"}


def _names_request_or_view(node: ast.expr) -> bool:
    """`request`, `view`, `self.request`, `context["view"]`…: an expression that is the request or the view."""
    if isinstance(node, ast.Name):
        return node.id in _REQUEST_OR_VIEW
    if isinstance(node, ast.Attribute):
        return node.attr in _REQUEST_OR_VIEW
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in _REQUEST_OR_VIEW
    return False


def _reads_by_name(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr"}
            and node.args
            and _names_request_or_view(node.args[0])
        ):
            found.append(f"{node.func.id}(…) line {node.lineno}")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in {"__dict__", "_request", "parser_context"}
            and (node.attr != "__dict__" or _names_request_or_view(node.value))
        ):
            found.append(f".{node.attr} line {node.lineno}")
    return found


def test_no_request_attribute_or_view_hook_is_read_by_name() -> None:
    """A view, the throttle and the handler receive what they need in the request's EdgePlan (plan_of(request),
    PlannedView.plan), not from attributes or hooks probed with getattr or read from DRF's internals."""
    offenders = {module: found for module, path in _product_modules().items() if (found := _reads_by_name(path))}
    assert offenders == {}, offenders


def _dereferences_the_view(path: Path) -> list[int]:
    """Lines reading an attribute of `view` or taking the view out of DRF's handler context."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        reads_view = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "view"
        if reads_view or (isinstance(node, ast.Constant) and node.value == "view"):
            lines.append(node.lineno)
    return lines


def test_the_throttle_and_the_handler_never_call_back_into_a_view() -> None:
    """They import no view module (PlannedView's, or an app's `api`) and never dereference the view."""
    view_modules = {m for m in GRAPH if m == "memoryhub.api.views" or (_is_app(m) and "api" in m.split("."))}
    for module in ("memoryhub.api.throttling", "memoryhub.api.handler"):
        assert sorted(GRAPH[module] & view_modules) == [], module
        assert _dereferences_the_view(_product_modules()[module]) == [], module


def test_only_planned_views_initial_attaches_the_plan() -> None:
    """`request.plan` is set in one place (PlannedView.initial); everything else reads it through plan_of/plan."""
    setters = []
    for module, path in _product_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(element, ast.Attribute) and element.attr == "plan":
                        setters.append(f"{module}:{node.lineno}")
    assert [s.split(":")[0] for s in setters] == ["memoryhub.api.views"], setters


def test_views_that_plan_declare_their_planner() -> None:
    """The memory PUT and the turn prepare are planned; their planner names the functions, not view hooks."""
    from memories.api.documents import MemoryDocumentView, plan_memory_put
    from memories.api.turns import TurnPrepareView, plan_turn_prepare
    from memoryhub.api.views import PlannedView

    assert issubclass(MemoryDocumentView, PlannedView) and issubclass(TurnPrepareView, PlannedView)
    assert MemoryDocumentView.planner.methods == {"PUT": plan_memory_put}
    assert MemoryDocumentView.planner.key_checked_by_write == {"PUT"}
    assert TurnPrepareView.planner.methods == {"POST": plan_turn_prepare}
    hooks = {"working_set_scopes", "working_set_writes", "key_checked_by_write"}
    assert not [name for view in (MemoryDocumentView, TurnPrepareView) for name in hooks if name in vars(view)]


def _module_of(name: str) -> str | None:
    """The product module an imported name lives in (`from a.b import c` names a.b.c: a module or a name in a.b)."""
    while name and name not in GRAPH:
        name = name.rpartition(".")[0]
    return name or None


def test_no_import_cycle_between_modules() -> None:
    """No module imports, at any depth, a module that imports it back (memories/webhooks/tasks.py and
    services/deliveries.py were such a pair): the graph of product modules has no strongly connected component."""
    follows = {
        module: {
            target
            for name in imported
            if (target := _module_of(name)) and target != module and not module.startswith(target + ".")
        }
        for module, imported in GRAPH.items()
    }

    reach = {module: _reachable(follows, module) for module in follows}
    cycles = sorted(
        f"{module} -> {target}" for module, targets in follows.items() for target in targets if module in reach[target]
    )
    assert cycles == [], cycles


def _reachable(follows: dict[str, set[str]], start: str) -> set[str]:
    """Every node an edge path from `start` reaches (start itself only through a cycle)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in follows.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
