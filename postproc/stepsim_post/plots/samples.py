"""The plots of the /samples time series: link utilisation, queue depth, PFC pause."""

from ..fabric import fabric_of
from ..report import fmt_time
from ..schema import TIERS
from .common import (MAX_COLUMNS, SCALE_PERCENTILE, _time_ticks, _unavailable,
                     need_samples)


def tier_name(tier):
    return TIERS[tier] if 0 <= tier < len(TIERS) else str(int(tier))


def _tier_text(opts):
    return "" if not opts.tiers else f", {'/'.join(TIERS[t] for t in opts.tiers)} tier"


def _candidates(fabric, opts, mask):
    """Port ids where `mask` holds, in the chosen tiers."""
    import numpy as np
    if opts.tiers:
        mask = mask & np.isin(fabric.tier, opts.tiers)
    return np.nonzero(mask)[0]


def _busiest(fabric, ids, score, limit):
    """At most `limit` of `ids` (the highest `score`), in tier, node, port order."""
    import numpy as np
    if len(ids) > limit:
        ids = ids[np.argsort(-score[ids], kind="stable")[:limit]]
    return ids[np.lexsort((fabric.index[ids], fabric.node[ids], fabric.tier[ids]))]


def _columns(samples, bins):
    """Bins per column (at most MAX_COLUMNS columns) and each column's covered time (s)."""
    import numpy as np
    factor = max(1, -(-bins // MAX_COLUMNS))
    cols = max(1, -(-bins // factor))
    cover = np.minimum(factor, bins - np.arange(cols) * factor) * samples.interval_s
    return factor, cover


def data_scale(values):
    """The colour scale's top: the SCALE_PERCENTILE-th percentile of the non-zero values (the
    largest when that is 0), and the largest value."""
    import numpy as np
    active = values[values > 0]
    if not len(active):
        return 1.0, 0.0
    top = float(np.percentile(active, SCALE_PERCENTILE))
    mx = float(active.max())
    return (top if top > 0 else mx), mx


def _port_heatmap(fig, ax, fabric, ids, grid, factor, samples, what):
    """ports x time heatmap of `grid` with a data-driven colour scale and named rows."""
    vmax, mx = data_scale(grid)
    span = grid.shape[1] * factor * samples.interval_s
    im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0,
                   vmax=vmax, extent=[0, span, len(ids) - 0.5, -0.5])
    every = max(1, -(-len(ids) // 64))
    ax.set_yticks(range(0, len(ids), every),
                  [f"{fabric.label(p)} ({tier_name(fabric.tier[p])})" for p in ids[::every]],
                  fontsize="x-small" if len(ids) > 16 else "small")
    _time_ticks(ax, span)
    ax.set_xlabel(f"{ax.get_xlabel()}; a column is {fmt_time(factor * samples.interval_s)}")
    ax.set_ylabel("sending port (node/port, tier)" +
                  (f", one in {every} labelled" if every > 1 else ""))
    fig.colorbar(im, ax=ax, extend="max" if mx > vmax else "neither", label=what,
                 fraction=0.04, pad=0.02, aspect=20 * max(1.0, fig.get_figheight() / 4))
    ax.set_title(f"{ax.get_title()}\ncolour scale 0 to {vmax:.3g}: the {SCALE_PERCENTILE}th "
                 f"percentile of the non-zero cells (largest {mx:.3g})", fontsize="medium")
    return im


def util_figure(meta, tables, name, opts):
    """Link utilisation (bytes * 8 / (rate * time)) per sending port over time."""
    import matplotlib.pyplot as plt
    import numpy as np
    path = opts.file
    need_samples(path, meta, tables, "link_util")
    samples = tables["samples"]
    fabric = fabric_of(path, tables, "link_util")
    pp = samples.per_port(fabric)
    cand = _candidates(fabric, opts, pp["bytes"] > 0)
    ids = _busiest(fabric, cand, pp["bytes"], opts.max_ports)
    fig, ax = plt.subplots(figsize=(12, min(14.0, 2.8 + 0.12 * max(1, len(ids)))))
    title = f"link utilisation over time (sending ports{_tier_text(opts)}"
    title += f": the {len(ids)} busiest of {len(cand)})" if len(ids) < len(cand) else ")"
    ax.set_title(title)
    if not len(ids) or pp["bins"] == 0:
        _unavailable(ax, f"no port{_tier_text(opts)} carried bytes in /samples")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    factor, cover = _columns(samples, pp["bins"])
    rate = fabric.rate_gbps[ids] * 1e9
    grid = samples.matrix(fabric, ids, "bytes", "sum", factor) * 8
    with np.errstate(divide="ignore", invalid="ignore"):
        grid = np.where(rate[:, None] > 0, grid / (rate[:, None] * cover[None, :]), np.nan)
    _port_heatmap(fig, ax, fabric, ids, grid, factor, samples,
                  "utilisation\n(fraction of line rate)")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def queue_figure(meta, tables, name, opts):
    """Queue depth over time (largest in each column) of the top-K ports by largest queue."""
    import matplotlib.pyplot as plt
    import numpy as np
    path = opts.file
    need_samples(path, meta, tables, "queue_depth")
    samples = tables["samples"]
    fabric = fabric_of(path, tables, "queue_depth")
    pp = samples.per_port(fabric)
    cand = _candidates(fabric, opts, pp["queue_max"] > 0)
    ids = cand[np.argsort(-pp["queue_max"][cand], kind="stable")[:opts.top]]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    ax.set_title(f"queue depth over time: the {len(ids)} port(s) with the largest queue"
                 f"{_tier_text(opts)} (of {len(cand)} that queued)")
    if not len(ids):
        _unavailable(ax, f"no queue built up at any port{_tier_text(opts)} in /samples")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    factor, _ = _columns(samples, pp["bins"])
    grid = samples.matrix(fabric, ids, "queue_max_bytes", "max", factor)
    t = np.arange(grid.shape[1] + 1) * factor * samples.interval_s
    for row, p in enumerate(ids):
        ax.step(t, np.append(grid[row], grid[row][-1]) / 1e3, where="post",
                label=f"{fabric.label(p)} -> {fabric.peer_label(p)} "
                      f"(max {pp['queue_max'][p] / 1e3:.3g} KB)")
    ax.set_xlim(0, t[-1])
    _time_ticks(ax, t[-1])
    ax.set_xlabel(f"{ax.get_xlabel()}; a step is {fmt_time(factor * samples.interval_s)}")
    ax.set_ylabel("queue depth (KB, largest in the interval)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def pause_figure(meta, tables, name, opts):
    """Fraction of each interval that a port spent paused by PFC, for the ports that paused."""
    import matplotlib.pyplot as plt
    path = opts.file
    need_samples(path, meta, tables, "pfc_pause")
    samples = tables["samples"]
    fabric = fabric_of(path, tables, "pfc_pause")
    pp = samples.per_port(fabric)
    cand = _candidates(fabric, opts, pp["paused_ps"] > 0)
    ids = _busiest(fabric, cand, pp["paused_ps"], opts.max_ports)
    fig, ax = plt.subplots(figsize=(12, min(14.0, 2.8 + 0.12 * max(1, len(ids)))))
    sent = int(pp["pause_sent"][_candidates(fabric, opts, pp["pause_sent"] > 0)].sum())
    title = (f"PFC pause over time: the {len(ids)} paused port(s){_tier_text(opts)}"
             + (f" (the longest paused of {len(cand)})" if len(ids) < len(cand) else "")
             + f"; {sent:,} pause frames sent")
    ax.set_title(title)
    if not len(ids):
        _unavailable(ax, f"no port{_tier_text(opts)} was paused by PFC in /samples")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    factor, cover = _columns(samples, pp["bins"])
    grid = samples.matrix(fabric, ids, "paused_ps", "sum", factor) * 1e-12 / cover[None, :]
    _port_heatmap(fig, ax, fabric, ids, grid, factor, samples,
                  "paused\n(fraction of the interval)")
    fig.suptitle(name, fontsize="medium")
    return fig, ax
