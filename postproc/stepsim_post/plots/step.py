"""The plots of every step file: op timeline, collective completion CDF, link heatmap, busbw."""

from ..report import fmt_time
from ..schema import GROUPS, OP_KINDS, TIERS, finished
from .common import (COMM_LANE, COMPUTE_LANE, OP_COLORS, _finish_log_x, _time_ticks,
                     _unavailable)


def timeline_figure(meta, tables, name, opts=None):
    """Per-stage op timeline with two lanes per stage: compute (forward, backward, optimizer)
    above, blocking communication and waits below, so thousands of thin communication bars
    cannot cover the compute (they once did). Bars have no outlines. One GPU per stage: the
    lowest-numbered one, when /ops holds several."""
    import matplotlib.pyplot as plt
    import numpy as np
    ops = tables["ops"]
    stages = int(ops["stage"].max()) + 1 if len(ops) else 1
    several = False
    if len(ops) and "gpu" in (ops.dtype.names or ()):
        first = np.full(stages, np.iinfo(np.int64).max)
        np.minimum.at(first, ops["stage"].astype(np.int64), ops["gpu"].astype(np.int64))
        keep = ops["gpu"].astype(np.int64) == first[ops["stage"].astype(np.int64)]
        several = not keep.all()
        ops = ops[keep]
    fig, ax = plt.subplots(figsize=(12, 1.5 + 0.7 * stages))
    for k in (4, 3, 2, 0, 1):
        sel = ops[ops["kind"] == k]
        compute = k in (0, 1, 2)
        y0, h = COMPUTE_LANE if compute else COMM_LANE
        for st in np.unique(sel["stage"]):
            s2 = sel[sel["stage"] == st]
            # Communication and waits keep a hairline outline in their own lane: at scale a
            # 1 ms collective in a 10 s step is narrower than a pixel and would vanish.
            ax.broken_barh(list(zip(s2["start_s"], s2["end_s"] - s2["start_s"])),
                           (float(st) + y0, h), facecolors=OP_COLORS[k],
                           edgecolors="none" if compute else OP_COLORS[k],
                           linewidth=0 if compute else 0.4, label=f"{OP_KINDS[k]}:{int(st)}")
    span = max(float(meta["step_s"]), float(ops["end_s"].max()) if len(ops) else 0) or 1
    for st in range(stages):  # each stage's exposed communication and waits, in numbers
        s2 = ops[ops["stage"] == st]
        comm = float((s2["end_s"] - s2["start_s"])[s2["kind"] == 3].sum())
        wait = float((s2["end_s"] - s2["start_s"])[s2["kind"] == 4].sum())
        ax.text(1.0, st + COMM_LANE[0] + COMM_LANE[1] / 2,
                f" comm {100 * comm / span:.1f}%, wait {100 * wait / span:.1f}%",
                transform=ax.get_yaxis_transform(), va="center", ha="left", fontsize="x-small")
    ax.set_xlim(0, span)
    _time_ticks(ax, span)
    ax.set_ylim(-0.5, stages - 0.5)
    for st in range(1, stages):
        ax.axhline(st - 0.5, color="#bbbbbb", linewidth=0.6)
    ticks, labels = [], []
    for st in range(stages):
        ticks += [st + COMM_LANE[0] + COMM_LANE[1] / 2, st + COMPUTE_LANE[0] + COMPUTE_LANE[1] / 2]
        labels += [f"{st} comm/wait", f"stage {st} compute"]
    ax.set_yticks(ticks, labels, fontsize="small" if stages <= 8 else "x-small")
    ax.set_ylabel("pipeline stage" + (" (its lowest GPU)" if several else ""))
    ax.set_title(f'op timeline: step {fmt_time(float(meta["step_s"]))}, compute '
                 f'{fmt_time(float(meta["compute_s"]))} on the critical stage')
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=OP_COLORS[k]) for k in OP_COLORS],
              ["forward (compute)", "backward (compute)", "optimizer", "blocking comm", "wait"],
              loc="upper left", bbox_to_anchor=(1.17, 1.0), fontsize="small")
    if not len(ops):
        _unavailable(ax, "no ops recorded")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def cdf_figure(meta, tables, name, opts=None):
    import matplotlib.pyplot as plt
    import numpy as np
    colls = tables["collectives"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = 0
    for gi, g in enumerate(GROUPS):
        sel = colls[(colls["group"] == gi) & finished(colls)]
        if len(sel) == 0 or g == "tp":
            continue
        t = np.sort((sel["end_s"] - sel["start_s"]) * 1e6)
        ax.step(t, np.arange(1, len(t) + 1) / len(t), where="post", label=f"{g} ({len(t)})")
        drawn += 1
    ax.set_title("completion time of the network groups' collectives")
    _finish_log_x(ax, drawn, "collective completion time (us)", "CDF (fraction of collectives)",
                  "no collectives outside TP in this step")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def heatmap_figure(meta, tables, name, opts=None):
    """Link utilization: each sending port's busy time over the step, as a share of that
    port's capacity (0 to 100 %: the same colour means the same load on a 100G and a 1.6T
    port), one row of ports per tier of the sending node (leaf, spine, ...), each row with its
    own port names."""
    import matplotlib.pyplot as plt
    import numpy as np
    links = tables["links"]
    step = float(meta["step_s"])
    title = "link utilization: busy time of each sending port over the step"
    if not len(links) or step <= 0:
        fig, ax = plt.subplots(figsize=(11, 3.5))
        ax.set_title(title)
        _unavailable(ax, f"no link counters: /links is recorded at packet fidelity only "
                         f"(this run: {meta['fidelity']} fidelity)")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    tiers = sorted(set(int(t) for t in links["tier"]))
    fig, axes = plt.subplots(len(tiers), 1, figsize=(11, 1.2 + 1.5 * len(tiers)),
                             squeeze=False, layout="constrained")
    axes = axes[:, 0]
    im = None
    for ax, t in zip(axes, tiers):
        sel = links[links["tier"] == t]
        sel = sel[np.argsort(sel["port"], kind="stable")]
        util = 100 * sel["busy_s"] / step
        im = ax.imshow(util[None, :], aspect="auto", vmin=0, vmax=100, cmap="viridis",
                       interpolation="nearest")
        tier = TIERS[t] if t < len(TIERS) else f"tier {t}"
        ax.set_yticks([0], [tier])
        every = max(1, -(-len(sel) // 24))  # at most 24 port names per row
        ticks = list(range(0, len(sel), every))
        ax.set_xticks(ticks, [f"n{int(sel['node'][i])}/p{int(sel['port'][i])}" for i in ticks],
                      rotation=60, fontsize="x-small")
        ax.text(len(sel) - 0.5, 0, f" max {float(util.max()):.1f} %", va="center",
                fontsize="x-small", color="white", ha="right")
        ax.set_xlabel(f"{tier} ports (node/port, by port"
                      f"{f'; one in {every} named' if every > 1 else ''})", fontsize="small")
    axes[0].set_title(title)
    axes[0].set_ylabel("tier of the sending node", fontsize="small")
    fig.colorbar(im, ax=list(axes), label="busy (% of the port's capacity)")
    fig.suptitle(name, fontsize="medium")
    return fig, axes[0]


def busbw_figure(meta, tables, name, opts=None):
    import matplotlib.pyplot as plt
    colls = tables["collectives"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.set_title("bus bandwidth of the step's collectives by size")
    drawn = 0
    for gi, g in enumerate(GROUPS):
        sel = colls[(colls["group"] == gi) & finished(colls)]
        if len(sel):
            ax.scatter(sel["bytes"], sel["busbw_gbs"], s=8, label=g)
            drawn += 1
    _finish_log_x(ax, drawn, "size S (bytes)", "busbw (GB/s)", "no collectives in this step")
    fig.suptitle(name, fontsize="medium")
    return fig, ax
