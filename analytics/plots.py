"""PNG plots of the reports (matplotlib's Agg canvas, no pyplot global state, no display)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

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
    """Failing tests per L1 round for the units with the most rounds: one line per unit (no mean: units have
    different numbers of rounds), whole-number axes, points of different units side by side rather than on top."""
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
    spread = 0.3 / max(1, len(longest) - 1)
    for n, (label, values) in enumerate(longest):
        shift = (n - (len(longest) - 1) / 2) * spread if len(longest) > 1 else 0.0
        xs = [i + 1 + shift for i in range(len(values))]
        ax.plot(xs, values, marker="o", markersize=4, linewidth=1, alpha=0.8, label=label)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("round of the unit loop (attempt order)")
    ax.set_ylabel("failing tests")
    shown = f"{len(longest)} of {len(series)} unit(s)" if len(series) > len(longest) else f"{len(series)} unit(s)"
    ax.legend(fontsize="small", loc="upper right", title=shown, title_fontsize="small")
    return _save(fig, path)


def spend_over_time_png(spend: pd.DataFrame, path: Path) -> Path:
    """Cost per time bucket (bars) and cumulative cost (line); tokens instead when no call had a cost (a scripted
    or subscription run still used tokens)."""
    fig = Figure(figsize=(8, 4.5))
    ax = fig.subplots()
    if spend.empty:
        ax.set_title("LLM spend over time")
        _empty(ax, "LLM usage")
        return _save(fig, path)
    by_cost = float(spend["cost_usd"].fillna(0).sum()) > 0
    column, unit = ("cost_usd", "USD") if by_cost else ("total_tokens", "tokens")
    ax.set_title(f"LLM spend over time ({unit})" + ("" if by_cost else ": no call had a cost"))
    buckets = pd.to_datetime(spend["bucket"])
    values = spend[column].fillna(0)
    width = (buckets.diff().min() if len(buckets) > 1 else pd.Timedelta(hours=1)) * 0.8
    ax.bar(buckets, values, width=width, color="tab:blue", alpha=0.6, label="per bucket")
    ax.set_ylabel(f"{unit} per bucket")
    cumulative = ax.twinx()
    cumulative.plot(buckets, values.cumsum(), color="tab:red", linewidth=2, label="cumulative")
    cumulative.set_ylabel(f"cumulative {unit}")
    handles = ax.get_legend_handles_labels()[0] + cumulative.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="upper left", fontsize="small")
    fig.autofmt_xdate()
    return _save(fig, path)
