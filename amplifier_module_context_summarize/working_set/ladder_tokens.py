"""The working set's size estimate at every step of its ladder, without writing the lines out at each step.

``section.render`` bisects the ladder on an estimate: the sum of each line's tokens at that step. Writing
every line out for each probe cost the whole section a dozen times per render. Each rung changes one item's
shape, so the items' part of the estimate is a running sum of per-rung changes; the count lines
(``- +12 more ...``) depend only on how many of a kind were dropped by then; only the one identifiers line is
written out per probe. ``LadderTokens.at(steps)`` equals ``sum(measure(line) for line in layout.lines(steps))``
(the tests check it on random working sets).
"""

from __future__ import annotations

import bisect
import itertools
from typing import TYPE_CHECKING

from .fold import HEADING
from .layout import DROP, TRIM, plural, shaped
from .shelves import Folder, Item

if TYPE_CHECKING:
    from .layout import Layout


class LadderTokens:
    """Per-rung changes of the items' tokens and where each kind's drops fall on the ladder."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        measure = self.measure = layout.measure
        items: list[Folder | Item] = [
            *layout.changed,
            *layout.seen,
            *layout.definitions,
            *layout.commands,
            *layout.errors,
            *layout.ids,
            *layout.urls,
        ]
        first_id = len(items) - len(layout.ids) - len(layout.urls)
        ids = range(first_id, first_id + len(layout.ids))

        known: dict[tuple[int, str], int] = {}

        def tokens(ident: int, shape: str) -> int:
            if shape == DROP or ident in ids:
                return 0
            item = items[ident]
            if not isinstance(item, Item):
                found = known.get((ident, shape))
                if found is None:
                    found = known[ident, shape] = sum(measure(line) for line in shaped(item, shape))
                return found
            return measure(f"- {item.short if shape == TRIM else item.text}")

        self.fixed = sum(measure(line) for line in self._fixed_lines())
        shapes = dict.fromkeys(range(len(items)), "")
        changes = []
        for kind, ident in layout.ladder:
            changes.append(tokens(ident, kind) - tokens(ident, shapes[ident]))
            shapes[ident] = kind
        self.base = sum(tokens(ident, "") for ident in range(len(items)))
        self.running = [0, *itertools.accumulate(changes)]
        at = {ident: step for step, (kind, ident) in enumerate(layout.ladder) if kind == DROP}
        self.drop_at = at
        """Ident -> the position of its drop rung."""
        self.kinds = {
            "changed": sorted(at[f.ident] for f in layout.changed if f.ident in at),
            "seen": sorted(at[f.ident] for f in layout.seen if f.ident in at),
            "definitions": sorted(at[d.ident] for d in layout.definitions if d.ident in at),
            "command": sorted(at[c.ident] for c in layout.commands if c.ident in at),
            "error": sorted(at[e.ident] for e in layout.errors if e.ident in at),
            "URL": sorted(at[u.ident] for u in layout.urls if u.ident in at),
            "id": sorted(at[i.ident] for i in layout.ids),
        }
        self.kinds["id ident"] = [ident for _, ident in sorted((at[i.ident], i.ident) for i in layout.ids)]
        self.ids_lines: dict[int, int] = {}
        dropped_commands = sorted((c for c in layout.commands if c.ident in at), key=lambda c: at[c.ident])
        self.command_counts = [0, *itertools.accumulate(c.commands for c in dropped_commands)]
        """Commands the first N dropped command lines stand for (a file's reads share one line)."""
        self.files = {
            kind: [
                0,
                *itertools.accumulate(len(f.files) for f in sorted(group, key=lambda f: at[f.ident]) if f.ident in at),
            ]
            for kind, group in (("changed", layout.changed), ("seen", layout.seen))
        }

    def _fixed_lines(self) -> list[str]:
        """The lines every step shows: the heading, where paths are relative to, the titles."""
        layout = self.layout
        lines = [HEADING]
        if layout.relative:
            cd = f" Commands run there are shown without `cd {layout.root} &&`." if layout.in_root else ""
            lines.append(f"Paths are relative to {layout.root}.{cd}")
        if "changed" in layout.present:
            lines.append("Files changed:")
        if "seen" in layout.present:
            lines.append("Files read or used:")
        if "definitions" in layout.present:
            lines.append("Definitions written (newest first; · removed):")
        if layout.commands or "command" in layout.present:
            lines.append("Commands (latest outcome, last failure):")
        if layout.errors:
            lines.append("Tool errors (last failure of each):")
        if "URL" in layout.present:
            lines.append("URLs:")
        return lines

    def _ids_line(self, dropped: int) -> int:
        """Tokens of the identifiers line with its ``dropped`` oldest ids gone (the same for most probes)."""
        tokens = self.ids_lines.get(dropped)
        if tokens is None:
            layout = self.layout
            gone_ids = set(self.kinds["id ident"][:dropped])
            kept = [item.text for item in layout.ids if item.ident not in gone_ids]
            gone = dropped + layout.gone["id"]
            prefix = f"(+{gone} more) " if gone else ""
            tokens = self.ids_lines[dropped] = self.measure(f"Identifiers: {prefix}{', '.join(kept)}".rstrip())
        return tokens

    def _dropped(self, kind: str, steps: int) -> int:
        return bisect.bisect_left(self.kinds[kind], steps)

    def at(self, steps: int) -> int:
        """The estimate after the first ``steps`` rungs."""
        layout, measure = self.layout, self.measure
        total = self.fixed + self.base + self.running[steps]
        for kind, noun in (("changed", "changed"), ("seen", "read or used")):
            if kind not in layout.present:
                continue
            dropped = self._dropped(kind, steps)
            files = self.files[kind][dropped] + layout.gone[kind]
            if files:
                where = dropped + layout.gone[f"{kind} folders"]
                total += measure(f"- +{files} more {noun} {plural(files, 'file')} in {where} {plural(where, 'folder')}")
        if "definitions" in layout.present:
            gone = self._dropped("definitions", steps) + layout.gone["definitions"]
            if gone:
                total += measure(f"- +{gone} more changed {plural(gone, 'file')} with definitions")
        for items, noun in ((layout.commands, "command"), (layout.errors, "error")):
            if items or noun in layout.present:
                dropped = self._dropped(noun, steps)
                gone = (self.command_counts[dropped] if noun == "command" else dropped) + layout.gone[noun]
                if gone:
                    total += measure(f"- +{gone} earlier {plural(gone, noun)}")
        if "id" in layout.present:
            total += self._ids_line(bisect.bisect_left(self.kinds["id"], steps))
        if "URL" in layout.present:
            gone = self._dropped("URL", steps) + layout.gone["URL"]
            if gone:
                total += measure(f"- +{gone} more {plural(gone, 'URL')}")
        return total
