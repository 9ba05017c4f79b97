"""What a request shows, derived from the history and the state: the system messages (or the rendered system
prompt), the summary message and the pinned requests, the masked span, then the verbatim tail; its tokens; and
its copy fitted to a budget that leaves no room (never the state or the history)."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import Config
from ...core.budget import RequestBudget
from ...core.clip import MIN_CLIP_CHARS, Note, clip_tool_outputs, clip_within
from ...core.history import History, from_hook
from ...core.invariants import last_allowed_cut
from ...core.messages import Message, scrub_text
from ...core.state import (
    CompactionState,
    Shown,
    extra_pins,
    is_pin,
    pin_form,
    pinned_indices,
    pins_for,
    truncation_marker,
)
from ...core.tokens import TokenCounter
from ...summarizer.prompts import keep_names
from ...working_set.index import index_of
from .fit import Fitted, fit_rest, group_sources, handle_notes, pins_give_way, pre_clip
from .masking import Masks
from .splice import shown, summary_message, working_set_room
from .tail import TailView


@dataclass(frozen=True, slots=True)
class ShownMemo:
    """What ``state`` shows, kept for the hot path: re-derived whole when the state changes, and only its pinned
    latest request when ``request`` is not the history's latest request."""

    state: CompactionState
    request: int | None
    """``History.latest_request`` the pin was derived for; None: the pin is re-derived at the next request."""
    shows: Shown


@dataclass(frozen=True, slots=True)
class Injection:
    """What a ``context:post_compact`` hook put back, shown right after the summary of ``state``."""

    state: CompactionState
    message: Message
    tokens: int


@dataclass(frozen=True, slots=True)
class MaskedSpan:
    """The masked groups ``[boundary, tail_start)`` as shown, kept while the state's cuts stay the same."""

    boundary: int
    tail_start: int
    messages: list[Message]


class RequestView:
    """The view of one history in one state, with what is kept between requests to show it cheaply."""

    def __init__(self, config: Config, counter: TokenCounter, budget: RequestBudget) -> None:
        self.config, self.counter, self.budget = config, counter, budget
        self._tail = TailView()

    def install(self, history: History, masks: Masks | None, state: CompactionState) -> None:
        self.history, self.masks, self.state = history, masks, state
        self._masked: MaskedSpan | None = None
        self.clipped: tuple[int, ...] = ()
        """Stored indices of the messages the last fitted copy of the view shows clipped (recall searches them)."""
        self.pins_given_way: tuple[int, ...] = ()
        """Stored indices of the pins (``core.state.is_pin``) the last fitted copy of the view left out or shows
        clipped, on any rung of the fit ladder: ``context:pins_dropped`` reports them beside those past the room."""
        self._shown_memo: ShownMemo | None = None
        self.injection: Injection | None = None
        """What a ``context:post_compact`` hook put back, shown right after the summary of the state it followed."""

    @property
    def shown_memo(self) -> ShownMemo | None:
        """What the state shows, as kept for the hot path (read-only: ``remember_shown`` sets it)."""
        return self._shown_memo

    def remember_shown(self, state: CompactionState, shows: Shown, request: int | None = None) -> None:
        """A compaction installing ``state`` already worked out what it shows: keep it, so the next request does not.
        ``request``: the latest request its pin was derived for; None when it may be stale (a background compaction
        derived it before requests arrived), so the next request re-derives the pin."""
        self._shown_memo = ShownMemo(state, request, shows)

    def inject(self, text: str | None, wire: int | None = None) -> None:
        """Show ``text`` right after the summary until the next compaction (None: nothing), clipped to the pins'
        room (``pin_budget_ratio``) as the view's own counter counts it, so it can never crowd out the conversation
        whatever its script, and with any lone surrogate as U+FFFD: a hook's text is not the history, whose
        surrogates the request scrubs (``History.unencodable``), yet it is sent all the same. ``wire``: the budget
        whose room it takes, when the request about to use it has not planned it yet (a resume)."""
        if not text:
            self.injection = None
            return
        count = self.counter.count_message
        message = clip_within({"role": "user", "content": scrub_text(text)}, max(self.pin_room(wire), 1), count)
        self.injection = Injection(self.state, message, count(message))

    @property
    def injected_text(self) -> str | None:
        """The text shown after the current state's summary, as shown (clipped, scrubbed); None when none is."""
        injection = self.injection
        if injection is None or injection.state is not self.state:
            return None
        return str(injection.message["content"])

    def shown(self) -> Shown:
        """What the state shows, with what a post_compact hook put back after it."""
        shows = self._shown()
        injection = self.injection
        if injection is not None and injection.state is self.state:
            return shows.injecting((injection.message, injection.tokens))
        return shows

    def shown_by_state(self) -> Shown:
        """What the state itself shows (summary, pins), without what a hook put back after it."""
        return self._shown()

    @property
    def injected_tokens(self) -> int:
        """Tokens of what a hook put back after the current state (0: nothing). A compaction plans with this much
        room kept for it, since the hook puts its text back after every compaction: planned without it, the view
        lands its size above the target, and with a plan near its room every request compacts again."""
        injection = self.injection
        return injection.tokens if injection is not None and injection.state is self.state else 0

    def pin_room(self, wire: int | None = None) -> int:
        """The pins' room at ``wire`` (the budget last planned when None)."""
        return int((self.budget.wire if wire is None else wire) * self.config.pin_budget_ratio)

    def _shown(self) -> Shown:
        """What the state shows; re-derived when the state, the latest request (the pin) or the pins' room changes."""
        if self.history.pin_room != self.pin_room():
            self.history.pin_room = self.pin_room()
            self._shown_memo = None
        memo, latest, allowance = self._shown_memo, self.history.latest_request, self.config.summary_output_tokens
        if memo is None or memo.state is not self.state:
            c = self.config  # rooms from the uncalibrated budget: a resume renders the same
            ws, room = c.working_set_tokens(self.budget.wire), c.summary_room(self.budget.wire)
            shows = shown(self.state, self.history, self.counter, allowance, ws, c.recall_tool_name, room)
            memo = self._shown_memo = ShownMemo(self.state, latest, shows)
        elif memo.request != latest:  # a new request arrived: only the pin can change, not the summary
            pinned = pins_for(self.history, self.state.boundary, self.counter, allowance)
            memo = self._shown_memo = ShownMemo(self.state, latest, memo.shows.pinning(pinned))
        return memo.shows

    def working_set_room(self) -> int:
        """The working set's room in the state's summary message (as ``shown`` gives it)."""
        c, wire = self.config, self.budget.wire
        return working_set_room(self.state, c.working_set_tokens(wire), c.summary_room(wire))

    def system_view(self) -> list[Message]:
        history = self.history
        if self.budget.system_prompt is None:
            return [history.messages[i] for i in history.system]
        return [
            self.budget.system_prompt[1],
            *(history.messages[i] for i in history.system if from_hook(history.messages[i])),
        ]

    def system_view_tokens(self) -> int:
        if self.budget.system_prompt is None:
            return self.history.system_tokens
        return self.budget.system_prompt[2] + self.history.hook_system_tokens

    def tokens(self) -> int:
        prefix, state = self.history.prefix, self.state
        tail = state.tail_start
        masked = self.masks.tokens(state.boundary, tail) if self.masks is not None else 0
        return self.system_view_tokens() + self.shown().tokens + masked + prefix[-1] - prefix[tail]

    def mask_savings(self, end: int) -> int:
        """Tokens masking saves from the mask end to ``end`` (or as far as it may reach, if further): what the
        strategy tries before it pays for a summary ending at ``end``."""
        masks, start, prefix = self.masks, self.state.tail_start, self.history.prefix
        if masks is None:
            return 0
        end = min(max(end, masks.limit()), last_allowed_cut(self.history))
        return prefix[end] - prefix[start] - masks.tokens(start, end) if end > start else 0

    def sent_tokens(self, budget: int) -> int:
        """Tokens of the view a request at ``budget`` sends: the view's own, or those of its fitted copy."""
        tokens = self.tokens()
        if tokens <= budget:
            self.clipped = self.pins_given_way = ()
            return tokens
        return self.fitted(budget, tokens)[1]

    def fitted(self, budget: int, tokens: int | None = None) -> tuple[list[Message], int]:
        """The view and its tokens, fitted to ``budget`` in the copy sent (never in the state or the history).

        Only the newest groups and pinned requests can leave no room (they are never cut): first the summary's
        narrative gives way (clipped head and tail, or left out), then the newest tool outputs are clipped (the
        narrative taking back what room the clips leave), then the working set gives up items, the last part of
        the summary to give way (the files and commands the agent works with); then the truncation marker stands
        in for the summary, for this request alone (the state keeps it for the next), with the view cut as far
        as a cut may go; then the pinned first request gives way, and last any text still too large is clipped
        head and tail (``fit.py``). Every clip names its original's handle; ``clipped`` keeps the stored indices of
        the messages this copy shows clipped (recall searches them).
        """
        view = self.build()
        tokens = self.tokens() if tokens is None else tokens  # the caller's count, when it has one
        if tokens <= budget:
            self.clipped = self.pins_given_way = ()
            return view, tokens
        fitted = self._fit(view, budget)
        self.clipped, self.pins_given_way = fitted.clipped, fitted.pins_given_way
        return fitted.view, fitted.tokens

    def _fit(self, view: list[Message], budget: int) -> Fitted:
        history, tool = self.history, self.config.recall_tool_name
        counted: dict[int, tuple[Message, int]] = {}
        stand_in: dict[int, Message] = {}
        """A stored message with a text no view could hold whole -> its copy clipped to the most any could (rungs
        clip from the stored message, so a marker counts what the original lost; counting reads the copy)."""

        def count_one(message: Message) -> int:  # a message unchanged between rungs is counted once
            message = stand_in.get(id(message), message)
            known = counted.get(id(message))
            if known is None or known[0] is not message:
                known = counted[id(message)] = (message, self.counter.count_message(message))
            return known[1]

        def count(messages: list[Message]) -> int:
            return sum(count_one(m) for m in messages)

        def standing_in(base: list[Message], sources: list[int | None], notes: list[Note | None]) -> None:
            for original, copy in zip(base, pre_clip(base, sources, budget, notes), strict=True):
                if copy is not original:
                    stand_in[id(original)] = copy

        sources = self._sources()
        notes = handle_notes(history, sources, tool)
        base = list(view)
        standing_in(base, sources, notes)
        tokens, at = count(view), len(self.system_view())
        summary = self.shown().summary
        narrative: int | None = None
        if tokens > budget and summary is not None and self.state.segments:  # the narrative gives way first
            view[at], narrative = self._narrative_within(count_one(view[at]) - (tokens - budget))
            base[at] = view[at]
            tokens = count(view)
        if tokens > budget:  # then the newest outputs, each clip with its handle
            view, _ = clip_tool_outputs(view, budget, count, notes)
            tokens = count(view)
            if narrative is not None and tokens < budget:  # the clips' halving left room: the narrative takes it back
                view[at], narrative = self._narrative_within(count_one(view[at]) + budget - tokens)
                base[at] = view[at]
                tokens = count(view)
        if tokens > budget and summary is not None and self.state.segments:  # the working set last
            view[at] = base[at] = self._summary_within(tokens - budget, narrative)
            tokens = count(view)
        if tokens > budget and summary is not None and self.state.segments:
            view[at] = base[at] = truncation_marker(history, self.state.boundary)
            tokens = count(view)
        cut = self.state.boundary
        if tokens > budget and summary is not None and self.state.segments:
            # the smallest view there is: the marker, the pinned requests, the newest groups
            base, sources = self._truncated()
            cut = last_allowed_cut(history)
            notes = handle_notes(history, sources, tool)
            standing_in(base, sources, notes)
            view, _ = clip_tool_outputs(list(base), budget, count, notes)
            tokens = count(view)
        if tokens > budget:  # pins give way before the budget does: the first request (the latest is kept)
            latest, first = history.latest_request, history.first_request
            pinned = set(pinned_indices(history, cut)) - {latest}
            # room goes to the newest pins first; the oldest give way, the first request before them all
            positions = [i for i, s in enumerate(sources) if s in pinned]
            positions.sort(key=lambda i: (sources[i] == first, -i))
            view, kept = pins_give_way(view, positions, budget, count_one, notes)
            base, sources, notes = [base[i] for i in kept], [sources[i] for i in kept], [notes[i] for i in kept]
            tokens = count(view)
        if tokens > budget:  # a message larger than the budget: clipped head and tail, with its handle
            view, _ = fit_rest(view, sources, budget, count_one, notes)
            tokens = count(view)
        if tokens > budget and at < len(view) - 1 and sources[at] is None and view[at + 1].get("role") == "user":
            # The last rung: the module's own stand-in (the marker or summary) gives way, for this request alone,
            # when the stored messages alone fit and the view still opens with the user.
            view, base, sources = [*view], [*base], [*sources]
            del view[at], base[at], sources[at]
            tokens = count(view)
        view = [stand_in.get(id(m), m) for m in view]
        pairs = zip(sources, view, base, strict=True)
        clipped = tuple(dict.fromkeys(s for s, a, b in pairs if s is not None and a is not b))
        return Fitted(view, count(view), clipped, self._pins_given_way(cut, sources, clipped))

    def _pins_given_way(self, cut: int, sources: list[int | None], clipped: tuple[int, ...]) -> tuple[int, ...]:
        """The pins the fitted view does not show verbatim, whichever rung let them go: those the view pinned at
        ``cut`` (the state's boundary, or the truncation marker's cut) and left out, those the pins' room at the
        marker's cut has no place for (the state's own are reported by the manager), and any shown clipped.
        Linear in the pins and the view, never in the history."""
        history = self.history
        shown = set(sources)
        gone = {i for i in pinned_indices(history, cut) if i not in shown and pin_form(history, i) is not None}
        if cut > self.state.boundary and cut > 0 and (history.marked or history.recent_user_turns):
            gone.update(extra_pins(history, history.groups[cut - 1].end).dropped(history.marked))
        gone.update(clipped)
        return tuple(sorted(i for i in gone if is_pin(history, i)))

    def _sources(self) -> list[int | None]:
        """The stored index of each message of the view ``build`` shows; None for the system part and the summary,
        which a clip never shortens (masked groups line up with the groups as shown, message for message)."""
        history, state, shows = self.history, self.state, self.shown()
        sources: list[int | None] = [None] * len(self.system_view())
        sources += [None] * ((1 if shows.summary is not None else 0) + (1 if shows.injected is not None else 0))
        pins = pinned_indices(history, state.boundary)
        sources += pins if len(pins) == len(shows.pins) else [None] * len(shows.pins)
        for g in range(state.boundary, len(history.groups)):
            sources += group_sources(history, g, history.shown(g))
        return sources

    def _truncated(self) -> tuple[list[Message], list[int | None]]:
        """The view cut as far as a cut may go, the marker standing for everything before; and its sources."""
        history, cut = self.history, last_allowed_cut(self.history)
        pinned = pins_for(history, cut, self.counter, self.config.summary_output_tokens)
        indices = pinned_indices(history, cut)
        marker = [truncation_marker(history, cut)] if history.messages_before(cut) > 0 else []
        view = [
            *self.system_view(),
            *marker,
            *(message for message, _ in pinned),
            *history.span(cut, len(history.groups)),
        ]
        sources: list[int | None] = [None] * (len(self.system_view()) + len(marker))
        sources += indices if len(indices) == len(pinned) else [None] * len(pinned)
        for g in range(cut, len(history.groups)):
            sources += group_sources(history, g, history.shown(g))
        return view, sources

    @property
    def keep(self) -> tuple[str, ...]:
        """What the standing instructions say every summary keeps: a narrative clipped to fit keeps its lines."""
        return keep_names(self.config.summary_instructions)

    def _narrative_within(self, room: int) -> tuple[Message, int | None]:
        """The summary message within ``room`` tokens by its narrative alone (the segment summaries clipped head
        and tail, or left out), the working set whole: the summary's lists are the last of it to give way. Returns
        the message and the narrative's character limit (None: whole), or the message with no narrative at all
        when not even that fits."""
        c, state, history = self.config, self.state, self.history
        tool, ws, narrative = c.recall_tool_name, self.working_set_room(), state.summary_text or ""

        def rendered(limit: int) -> Message:
            message = summary_message(state, history, ws, tool, narrative_chars=limit, keep=self.keep)
            assert message is not None  # the state has segments
            return message

        count = self.counter.count_message
        whole = rendered(len(narrative))
        if count(whole) <= room or not narrative:
            return whole, None
        limit, failed = len(narrative) // 2, len(narrative)
        best = rendered(0)
        while limit >= MIN_CLIP_CHARS:  # halving, then bisecting: the longest narrative that fits
            message = rendered(limit)
            if count(message) <= room:
                best = message
                break
            failed, limit = limit, limit // 2
        else:
            return best, 0
        while failed - limit > max(limit // 16, 1):
            middle = (limit + failed) // 2
            message = rendered(middle)
            if count(message) <= room:
                best, limit = message, middle
            else:
                failed = middle
        return best, limit

    def _summary_within(self, excess: int, narrative: int | None) -> Message:
        """The summary message (its narrative as ``_narrative_within`` left it) with its working set ``excess``
        tokens shorter (left out when that is all of it)."""
        c, state, history = self.config, self.state, self.history
        count = self.counter.count_text
        rendered = index_of(history).render(state.summarized_end, self.working_set_room(), count)
        smaller = max(count(rendered) - excess, 0) if rendered else 0
        message = summary_message(
            state, history, smaller, c.recall_tool_name, narrative_chars=narrative, keep=self.keep
        )
        assert message is not None  # the state has segments
        return message

    def message_count(self) -> int:
        """``len(self.build())``, worked out from the history's groups: a compaction's measure of the view before
        it reads only this, and on a cold resume the view before is the whole history, which ``build`` would thaw
        (50,000 messages: a tenth of a second, and a full collection for the list of them)."""
        history, state = self.history, self.state
        count = len(self.system_view()) + len(self.shown().messages)
        groups = history.groups
        if not groups:
            return count
        if self.masks is not None and state.tail_start > state.boundary:  # masking keeps every message, one for one
            count += history.shown_count(state.boundary, state.tail_start)
        if state.tail_start < len(groups):
            count += history.shown_count(state.tail_start, len(groups))
        return count

    def build(self) -> list[Message]:
        view = self.system_view()
        view += self.shown().messages
        state = self.state
        if self.masks is not None and state.tail_start > state.boundary:
            known = self._masked
            if known is None or (known.boundary, known.tail_start) != (state.boundary, state.tail_start):
                span = self.masks.span(state.boundary, state.tail_start)
                known = self._masked = MaskedSpan(state.boundary, state.tail_start, span)
            view += known.messages
        self._tail.extend(view, self.history, state.tail_start)
        return view
