"""PNG plots of the reports (matplotlib's Agg canvas, no pyplot global state, no display)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

MAX_UNIT_LINES = 10


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", dpi=100)
    tmp.replace(path)
    return path


def _empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} in the ledger yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def failures_per_round_png(units: pd.DataFrame, path: Path) -> Path:
    """Failing tests per L1 round: the mean over all units, and the units with the most rounds."""
    fig = Figure(figsize=(8, 4.5))
    ax = fig.subplots()
    ax.set_title("Failing tests per round (unit loops)")
    series = [
        (f"{row.task_id or '-'}/{row.unit_id}", list(row.failures_per_round))
        for row in units.itertuples()
        if row.failures_per_round is not None and len(row.failures_per_round) > 0
    ]
    if not series:
        _empty(ax, "unit runs")
        return _save(fig, path)
    longest = sorted(series, key=lambda s: len(s[1]), reverse=True)[:MAX_UNIT_LINES]
    for label, values in longest:
        ax.plot(range(1, len(values) + 1), values, marker=".", linewidth=1, alpha=0.6, label=label)
    by_round = pd.DataFrame(
        [(i + 1, v) for _, values in series for i, v in enumerate(values)], columns=["round", "failed"]
    )
    mean = by_round.groupby("round")["failed"].mean()
    ax.plot(mean.index, mean.values, color="black", linewidth=2.5, label=f"mean of {len(series)} unit(s)")
    ax.set_xlabel("round (loop_round, attempt order)")
    ax.set_ylabel("failing tests")
    ax.legend(fontsize="small", loc="upper right")
    return _save(fig, path)


def spend_over_time_png(spend: pd.DataFrame, path: Path) -> Path:
    """Cost per time bucket (bars) and cumulative cost (line)."""
    fig = Figure(figsize=(8, 4.5))
    ax = fig.subplots()
    ax.set_title("LLM spend over time (USD)")
    if spend.empty:
        _empty(ax, "LLM usage")
        return _save(fig, path)
    buckets = pd.to_datetime(spend["bucket"])
    width = (buckets.diff().min() if len(buckets) > 1 else pd.Timedelta(hours=1)) * 0.8
    ax.bar(buckets, spend["cost_usd"], width=width, color="tab:blue", alpha=0.6, label="per bucket")
    ax.set_ylabel("cost per bucket")
    cumulative = ax.twinx()
    cumulative.plot(buckets, spend["cumulative_cost_usd"], color="tab:red", linewidth=2, label="cumulative")
    cumulative.set_ylabel("cumulative cost")
    handles = ax.get_legend_handles_labels()[0] + cumulative.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="upper left", fontsize="small")
    fig.autofmt_xdate()
    return _save(fig, path)
