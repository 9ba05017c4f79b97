"""``view_tokens.png``: view tokens per request for each strategy, one small panel per session."""

from __future__ import annotations

import math
from pathlib import Path

from .runner import Run

COLORS = {
    "summarize": "tab:blue",
    "summarize-only": "tab:purple",
    "mask": "tab:red",
    "naive": "tab:orange",
    "truncation": "tab:green",
}


def plot_view_tokens(runs: list[Run], budget: int, path: Path) -> Path | None:
    """Write the figure; None when matplotlib is not installed (the rest of the results do not need it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    replays = [run for run in runs if run.records]
    sessions = list(dict.fromkeys(run.session for run in replays))
    if not sessions:
        return None
    columns = min(2, len(sessions))
    rows = math.ceil(len(sessions) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(7 * columns, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(sessions) :]:
        ax.set_visible(False)
    for ax, session in zip(axes.flat, sessions, strict=False):
        chosen = [run for run in replays if run.session == session]
        full = chosen[0].records
        ax.plot(
            [r.message_index for r in full], [r.full_tokens for r in full], color="0.75", lw=1, label="full history"
        )
        for run in chosen:
            color = COLORS.get(run.strategy)
            xs = [r.message_index for r in run.records]
            ax.plot(xs, [r.view_tokens for r in run.records], lw=1.2, color=color, label=run.strategy)
            marks = [r for r in run.records if r.compacted]
            ax.scatter(
                [r.message_index for r in marks],
                [r.view_tokens for r in marks],
                s=14,
                marker="v",
                color=color,
                zorder=3,
            )
        ax.axhline(budget, color="black", lw=0.8, ls="--", label="budget")
        ax.set_ylim(0, budget * 1.25)
        ax.set_title(session, fontsize=9)
        ax.set_xlabel("messages in history", fontsize=8)
        ax.set_ylabel("view tokens", fontsize=8)
        ax.tick_params(labelsize=7)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8, frameon=False)
    figure.text(0.5, 0.005, "▼ compaction", ha="center", fontsize=8)
    figure.tight_layout(rect=(0, 0.02, 1, 0.96))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
