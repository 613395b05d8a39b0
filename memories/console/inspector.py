"""The turn inspector's reads: what the model saw (prompt spans, variables, sources) and what happened next.

Every query filters by the product, so an id of another product is simply not found. The prompt shown is
always the stored `Turn.prompt`; the variable spans are recomputed from the scenario version's template and
the stored variable values with the renderer's own placeholder pattern, and used only when they reproduce
the stored prompt character for character (otherwise the prompt is shown whole, with the reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.conf import settings
from django.utils.translation import gettext as _

from diaries.models import DiaryPlanRecord
from memories.console.diffs import Line, line_diff
from memories.models import Event, MemoryDocument, MemoryRevision, Message, Product, ScenarioVersion, Turn
from memories.state.models import ConversationStateRevision
from memories.story.models import StoryVersion
from memoryhub.errors import NotFound
from memoryhub.runtimes.rendering import PLACEHOLDER
from tables.models import TableEditRecord

USER_MESSAGE = "userMessage"  # the built-in variable every template may use (registry.BUILTIN_VARIABLES)
PALETTE_SIZE = 8  # colours in templates/console/inspector/_style.html


@dataclass(frozen=True)
class Segment:
    """A stretch of the prompt: template text, or the value of one variable at [start, end)."""

    text: str
    start: int
    end: int
    variable: str | None = None
    colour: int = 0


@dataclass(frozen=True)
class PromptView:
    prompt: str  # what is shown: the stored prompt, cut at settings.INSPECTOR_PROMPT_MAX_CHARS
    segments: list[Segment]
    exact: bool  # the spans reproduce the stored prompt exactly
    problem: str = ""  # why the spans are not shown, when they are not
    length: int = 0  # the stored prompt's length
    hidden: int = 0  # characters past the display cap, not shown


@dataclass(frozen=True)
class VariableView:
    """One variable the turn recalled or used, with its source's status and what it recalled."""

    name: str
    referenced: bool
    text: str
    colour: int
    source: dict | None = None
    occurrences: int = 0


@dataclass(frozen=True)
class VariableChange:
    name: str
    change: str  # "changed" | "added" | "removed" | "same"
    lines: list[Line] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    previous: Turn | None
    changes: list[VariableChange]
    prompt_changed: bool
    prompt_lines: list[Line] = field(default_factory=list)  # the two whole prompts, line by line

    @property
    def changed_names(self) -> list[str]:
        return [c.name for c in self.changes if c.change != "same"]


@dataclass(frozen=True)
class Aftermath:
    """What followed the turn: events, table edits, diary decisions, state/story commits, memory writes."""

    memory_write: dict
    events: list[Event]
    table_edit: TableEditRecord | None
    diary_plans: list[DiaryPlanRecord]
    state_revisions: list[ConversationStateRevision]
    story_versions: list[StoryVersion]
    document: MemoryDocument | None
    document_revisions: list[MemoryRevision]


@dataclass(frozen=True)
class TurnInspection:
    turn: Turn
    prompt: PromptView
    variables: list[VariableView]
    aftermath: Aftermath
    comparison: Comparison
    conversation_pk: int

    @property
    def referenced(self) -> list[VariableView]:
        return [v for v in self.variables if v.referenced]

    @property
    def unreferenced(self) -> list[VariableView]:
        return [v for v in self.variables if not v.referenced]


def turn_inspection(*, product: Product, turn_id: int) -> TurnInspection:
    turn = _turn(product, turn_id)
    prompt = prompt_view(turn)
    colours = _colours(turn, prompt)
    prompt = replace(prompt, segments=[replace(s, colour=colours.get(s.variable or "", 0)) for s in prompt.segments])
    return TurnInspection(
        turn=turn,
        prompt=prompt,
        variables=variable_views(turn, prompt, colours),
        aftermath=aftermath(turn),
        comparison=compare_with_previous(turn),
        conversation_pk=turn.conversation_row_id,
    )


def _turn(product: Product, turn_id: int) -> Turn:
    turn = Turn.objects.select_related("scenario", "product").filter(product=product, pk=turn_id).first()
    if turn is None:
        raise NotFound(f"no turn {turn_id} in this product")
    return turn


def turn_values(turn: Turn) -> dict[str, str]:
    """The values the prompt was rendered with (turns.turn_prepare: the recalled variables + userMessage)."""
    return {**(turn.variables or {}), USER_MESSAGE: turn.user_message}


def turn_template(turn: Turn) -> tuple[str | None, str]:
    """The template of the scenario version the turn was rendered from, or None and why it is not known."""
    if turn.scenario_id is None:
        return None, _("the scenario was deleted, so the template of this turn is no longer known")
    snapshot = (
        ScenarioVersion.objects.filter(scenario_id=turn.scenario_id, version=turn.scenario_version)
        .values_list("snapshot", flat=True)
        .first()
    )
    if isinstance(snapshot, dict) and isinstance(snapshot.get("template"), str):
        return snapshot["template"], ""
    if turn.scenario and turn.scenario.version == turn.scenario_version:
        return turn.scenario.template, ""
    return None, _("scenario version %(version)s is no longer kept") % {"version": turn.scenario_version}


def render_segments(template: str, values: dict[str, str]) -> list[Segment]:
    """Render like rendering.render_template, one pass, recording where each variable's value landed."""
    segments: list[Segment] = []
    last = position = 0
    for match in PLACEHOLDER.finditer(template):
        if match.start() > last:
            text = template[last : match.start()]
            segments.append(Segment(text, position, position + len(text)))
            position += len(text)
        value = values.get(match.group(1), "")
        segments.append(Segment(value, position, position + len(value), variable=match.group(1)))
        position += len(value)
        last = match.end()
    if last < len(template):
        segments.append(Segment(template[last:], position, position + len(template) - last))
    return segments


def prompt_view(turn: Turn) -> PromptView:
    """The prompt's spans, cut at the display cap (a page of hundreds of megabytes helps no operator)."""
    return _clipped(_whole_view(turn), settings.INSPECTOR_PROMPT_MAX_CHARS)


def _whole_view(turn: Turn) -> PromptView:
    template, problem = turn_template(turn)
    whole = [Segment(turn.prompt, 0, len(turn.prompt))]
    if template is None:
        return PromptView(turn.prompt, whole, exact=False, problem=problem)
    segments = render_segments(template, turn_values(turn))
    if not _reproduces(segments, turn.prompt):
        reason = _("re-rendering the scenario version's template does not reproduce the stored prompt")
        return PromptView(turn.prompt, whole, exact=False, problem=reason)
    return PromptView(turn.prompt, segments, exact=True)


def _reproduces(segments: list[Segment], prompt: str) -> bool:
    # Compared in place: joining the segments would copy the whole prompt once more.
    end = segments[-1].end if segments else 0
    return end == len(prompt) and all(prompt.startswith(s.text, s.start) for s in segments)


def _clipped(view: PromptView, limit: int) -> PromptView:
    length = len(view.prompt)
    if length <= limit:
        return replace(view, length=length)
    kept = [replace(s, text=s.text[: limit - s.start], end=min(s.end, limit)) for s in view.segments if s.start < limit]
    return replace(view, prompt=view.prompt[:limit], segments=kept, length=length, hidden=length - limit)


def _colours(turn: Turn, prompt: PromptView) -> dict[str, int]:
    names = [s.variable for s in prompt.segments if s.variable]
    names += list(turn.referenced_variables or []) + list(turn.unreferenced_variables or [])
    names += list((turn.variables or {}).keys())
    return {name: index % PALETTE_SIZE for index, name in enumerate(dict.fromkeys(names))}


def variable_views(turn: Turn, prompt: PromptView, colours: dict[str, int]) -> list[VariableView]:
    sources = {s.get("variable"): s for s in turn.sources or [] if isinstance(s, dict)}
    values = turn_values(turn)
    used = [s.variable for s in prompt.segments if s.variable]
    referenced = set(turn.referenced_variables or []) | set(used)
    views = []
    for name, colour in colours.items():
        segments = [s for s in prompt.segments if s.variable == name]
        views.append(
            VariableView(
                name=name,
                referenced=name in referenced,
                text=values.get(name, ""),
                colour=colour,
                source=sources.get(name),
                occurrences=len(segments),
            )
        )
    return views


def _conversation_turns(turn: Turn):
    return Turn.objects.filter(product=turn.product, user_id=turn.user_id, conversation_id=turn.conversation_id)


def aftermath(turn: Turn) -> Aftermath:
    product, where = turn.product, {"user_id": turn.user_id, "conversation_id": turn.conversation_id}
    next_turn = _conversation_turns(turn).filter(pk__gt=turn.pk).order_by("pk").first()
    replies = Message.objects.filter(product=product, turn=turn, role="assistant").values_list("pk", flat=True)
    document = MemoryDocument.objects.filter(product=product, **where).first()
    revisions = MemoryRevision.objects.filter(product=product, created_at__gte=turn.created_at, **where)
    if next_turn is not None:
        revisions = revisions.filter(created_at__lt=next_turn.created_at)
    return Aftermath(
        memory_write=turn.memory_write or {},
        events=list(Event.objects.filter(product=product, turn=turn).order_by("pk")),
        table_edit=TableEditRecord.objects.filter(product=product, turn=turn).first(),
        diary_plans=list(
            DiaryPlanRecord.objects.filter(product=product, turn=turn).select_related("entry").order_by("pk")
        ),
        state_revisions=list(
            ConversationStateRevision.objects.filter(
                product=product, state__user_id=turn.user_id, state__conversation_id=turn.conversation_id
            )
            .filter(round=turn.round)
            .order_by("revision")
        ),
        story_versions=list(
            StoryVersion.objects.filter(product=product, anchor_message_id__in=list(replies))
            .select_related("snapshot")
            .order_by("version")
        ),
        document=document,
        document_revisions=list(revisions.order_by("revision")),
    )


def previous_turn(turn: Turn) -> Turn | None:
    return _conversation_turns(turn).filter(pk__lt=turn.pk).order_by("-pk").first()


def compare_with_previous(turn: Turn) -> Comparison:
    """Which variables (and userMessage) differ between this turn's prompt and the previous turn's."""
    previous = previous_turn(turn)
    if previous is None:
        return Comparison(None, [], prompt_changed=False)
    old, new = turn_values(previous), turn_values(turn)
    changes = [_change(name, old, new) for name in dict.fromkeys([*new, *old])]
    limit = settings.INSPECTOR_PROMPT_MAX_CHARS  # the diff, like the prompt, covers what is shown
    lines = line_diff(previous.prompt[:limit], turn.prompt[:limit])
    return Comparison(previous, changes, prompt_changed=previous.prompt != turn.prompt, prompt_lines=lines)


def _change(name: str, old: dict[str, str], new: dict[str, str]) -> VariableChange:
    if name not in old:
        return VariableChange(name, "added", line_diff("", new[name]))
    if name not in new:
        return VariableChange(name, "removed", line_diff(old[name], ""))
    if old[name] == new[name]:
        return VariableChange(name, "same")
    return VariableChange(name, "changed", line_diff(old[name], new[name]))
