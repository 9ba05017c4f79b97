"""What was lost: the one account ``compact`` (its lines and ``--json``) and ``inspect`` (Markdown and HTML) show.

At each request that installed a compaction, the artifacts (the ledger's files, commands, URLs, ids and error
lines) of every hidden message — summarized, truncated or masked — are checked against the text that stands
for them in the view actually sent: what lies between the system messages and the verbatim tail (the summary
with its working set as the request fitted it, the pinned requests, the masked messages). The verbatim tail does
not count: an artifact the summary dropped is lost even while a recent message happens to name it, so a loss
is told at the compaction that made it, not when the tail moves on.

Successive accounts are compared item by item (``running``): what is newly lost, what is named again, and the
running total, which obeys ``lost = previous + newly lost - named again``. It can fall: a summary names again
what masking had cut (a clipped heredoc, a masked error line), or a request's fitting keeps the working set an
earlier one had to shorten. The ``context:post_compact`` event's ``artifacts_lost`` is another measure (the
newly hidden groups against the summary as the compaction rendered it, before any request fitted it): the
reports show this account only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compaction.view.losses import KINDS, Account, HiddenLedger
from ..core.messages import Message, message_text
from ..manager import SummarizingContextManager


@dataclass(frozen=True)
class Loss:
    """One compaction's line of the account: the account after it, and what changed since the previous one."""

    account: Account
    newly_lost: dict[str, list[str]]
    """Lost now, not lost after the previous compaction."""
    named_again: dict[str, list[str]]
    """Lost after the previous compaction, named again now."""

    @property
    def lost(self) -> int:
        """Lost so far: artifacts of the hidden messages the standing text does not name."""
        return self.account.lost_count

    @property
    def total(self) -> int:
        """Artifacts of the hidden messages."""
        return self.account.lost_count + self.account.kept_count

    @property
    def newly(self) -> int:
        return sum(map(len, self.newly_lost.values()))

    @property
    def regained(self) -> int:
        return sum(map(len, self.named_again.values()))

    def as_json(self) -> dict[str, object]:
        """The ``--json`` form: counts, and the items that changed by kind (the kinds with none left out)."""
        return {
            "newly_lost": self.newly,
            "named_again": self.regained,
            "lost_so_far": self.lost,
            "hidden_artifacts": self.total,
            "newly_lost_items": {kind: items for kind, items in self.newly_lost.items() if items},
            "named_again_items": {kind: items for kind, items in self.named_again.items() if items},
        }


def standing_text(manager: SummarizingContextManager, view: list[Message]) -> str:
    """The text of ``view`` (as sent for the manager's current state) between its system part and its verbatim
    tail: what stands for the hidden messages. Fitting changes only what comes before the tail (the summary's
    working set shortened, pins giving way), so the tail is the last as many messages as the built view's."""
    shows, state, masks = manager.view.shown(), manager.state, manager.masks
    head = len(manager.view.system_view()) + len(shows.messages)
    if masks is not None and state.tail_start > state.boundary:
        head += len(masks.span(state.boundary, state.tail_start))
    tail = max(len(manager.view.build()) - head, 0)
    start = len(manager.view.system_view())
    return "\n".join(message_text(m) for m in view[start : max(len(view) - tail, start)])


class ViewAccount:
    """The account at each request that compacted: the hidden messages' artifacts against the view sent. One per
    replay, so the hidden prefix is read once however many compactions it outlives."""

    def __init__(self, manager: SummarizingContextManager) -> None:
        self.manager = manager
        self.ledger = HiddenLedger(manager.history)

    def __call__(self, view: list[Message]) -> Account:
        """Which artifacts of the hidden messages ``view`` (sent for the manager's current state) still names where
        it stands for them."""
        return self.ledger.account(self.manager.state.tail_start, standing_text(self.manager, view))


def running(accounts: list[Account]) -> list[Loss]:
    """Each account with what it newly lost and named again since the one before it (the first: since nothing)."""
    before: dict[str, list[str]] = {kind: [] for kind in KINDS}
    found = []
    for account in accounts:
        lost = account.lost
        was, now = ({kind: set(d.get(kind, [])) for kind in KINDS} for d in (before, lost))
        newly = {kind: [i for i in lost.get(kind, []) if i not in was[kind]] for kind in KINDS}
        again = {kind: [i for i in before[kind] if i not in now[kind]] for kind in KINDS}
        found.append(Loss(account, newly, again))
        before = {kind: list(lost.get(kind, [])) for kind in KINDS}
    return found
