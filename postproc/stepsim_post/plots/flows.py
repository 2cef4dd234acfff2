"""The plots of /flows' times (schema version 2): the flow Gantt and the flow FCT CDF."""

from ..fabric import fabric_of
from ..report import fmt_time
from ..schema import GROUPS, KINDS, UserError, finished
from .common import GROUP_COLORS, _finish_log_x, _time_ticks, _unavailable, need_v2


def timed(flows):
    """Rows of /flows with a start and an end (-1: unknown)."""
    return (flows["start_ps"] >= 0) & (flows["end_ps"] >= flows["start_ps"])


def default_collective(tables):
    """The longest network (non-TP) collective with timed flows; else the longest of any
    group; None without timed flows."""
    import numpy as np
    colls, flows = tables["collectives"], tables["flows"]
    ids = np.unique(flows["collective"][timed(flows)]).astype(np.int64)
    ids = ids[ids < len(colls)]
    ids = ids[finished(colls)[ids]]
    if not len(ids):
        return None
    net = colls["group"][ids] != 0
    if net.any():
        ids = ids[net]
    dur = colls["end_s"][ids] - colls["start_s"][ids]
    return int(ids[np.argmax(dur)])


def _flow_end_label(fabric, gpu, nic):
    return f"GPU {int(gpu)} ({fabric.label(nic) if fabric else f'port {int(nic)}'})"


def _fmt_bytes(b):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{int(b)} B"


def gantt_figure(meta, tables, name, opts):
    """One bar per flow of a collective (`opts.collective`, default the longest network
    collective) from its start to its end, its first byte marked, labelled src -> dst."""
    import matplotlib.pyplot as plt
    import numpy as np
    path = opts.file
    need_v2(path, meta, "flow_gantt")
    colls, flows = tables["collectives"], tables["flows"]
    cid = opts.collective
    if cid is not None:
        if not 0 <= cid < len(colls):
            raise UserError(f"--collective {cid}: no such collective ({path}: /collectives ids "
                            f"0..{len(colls) - 1})")
        if not (flows["collective"] == cid).any():
            have = [int(i) for i in np.unique(flows["collective"]) if i < len(colls)]
            same = [i for i in have if all(colls[k][i] == colls[k][cid]
                                           for k in ("group", "kind", "gpus", "bytes"))]
            if same:
                raise UserError(f"--collective {cid}: {path} has no /flows rows for it; its "
                                f"flows are those of collective {same[0]}, the first of the "
                                f"same kind, size and GPUs (--collective {same[0]})")
            listed = ", ".join(str(i) for i in have[:12]) + (", ..." if len(have) > 12 else "")
            raise UserError(f"--collective {cid}: {path} has no /flows rows for it (flows are "
                            f"recorded for collective(s) {listed or 'none'})")
    else:
        cid = default_collective(tables)
    fig_h = 3.0
    sel = flows[flows["collective"] == cid] if cid is not None else flows[:0]
    ok = timed(sel)
    drawn = sel[ok]
    timed_n = len(drawn)
    cap = getattr(opts, "max_flows", None) or timed_n
    if timed_n > cap:  # the flows that end last: the tail that sets the collective's time
        drawn = drawn[np.argsort(drawn["end_ps"], kind="stable")[timed_n - cap:]]
    if len(drawn):
        fig_h = min(30.0, 2.2 + 0.2 * len(drawn))
    fig, ax = plt.subplots(figsize=(12, fig_h))
    if cid is None:
        ax.set_title("per-flow timeline")
        _unavailable(ax, f"no flow times recorded (this run: {meta['fidelity']} fidelity, "
                         f"{len(flows)} /flows rows)")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    c = colls[cid]
    g, k = int(c["group"]), int(c["kind"])
    gname = GROUPS[g] if g < len(GROUPS) else str(g)
    kname = KINDS[k] if k < len(KINDS) else str(k)
    reps = int(sel["repeats"].max()) if len(sel) else 1
    title = (f"flows of collective {cid}: {gname} {kname}, {int(c['gpus'])} GPUs, S = "
             f"{_fmt_bytes(float(c['bytes']))}; {timed_n} flows")
    if len(drawn) < timed_n:
        title += f", the {len(drawn)} that end last drawn (--max-flows)"
    if reps > 1:
        title += f", the first of {reps} repetitions"
    if len(sel) > timed_n:
        title += f"; {len(sel) - timed_n} without times not drawn"
    ax.set_title(title, fontsize="medium")
    if not len(drawn):
        _unavailable(ax, f"the {len(sel)} flows of collective {cid} carry no times")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    drawn = drawn[np.lexsort((drawn["dst_gpu"], drawn["src_gpu"], drawn["start_ps"]))]
    fabric = None
    if tables.get("nodes") is not None and tables.get("ports") is not None:
        fabric = fabric_of(path, tables, "flow_gantt")
    t0_ps = int(drawn["start_ps"].min())
    start = (drawn["start_ps"] - t0_ps) * 1e-12
    dur = (drawn["end_ps"] - drawn["start_ps"]) * 1e-12
    y = np.arange(len(drawn))
    ax.barh(y, dur, left=start, height=0.7, color=GROUP_COLORS.get(g, "#1f77b4"),
            edgecolor="none", linewidth=0, label="flow: start to end")
    fb = drawn["first_byte_ps"] >= 0
    if fb.any():
        ax.scatter((drawn["first_byte_ps"][fb] - t0_ps) * 1e-12, y[fb], marker="|",
                   color="black", s=60, zorder=3, label="first byte")
    for t, what in ((float(c["start_s"]), "start"), (float(c["end_s"]), "end")):
        ax.axvline(t - t0_ps * 1e-12, color="gray", linestyle="--", linewidth=0.8,
                   label="collective start, end (/collectives)" if what == "start" else None)
    labels = [f"{_flow_end_label(fabric, r['src_gpu'], r['src_nic'])} -> "
              f"{_flow_end_label(fabric, r['dst_gpu'], r['dst_nic'])}" for r in drawn]
    every = max(1, -(-len(drawn) // 100))
    ax.set_yticks(y[::every], labels[::every], fontsize="x-small" if len(drawn) > 24 else "small")
    ax.set_ylim(len(drawn) - 0.5, -0.5)
    span = float((drawn["end_ps"].max() - t0_ps) * 1e-12)
    lo = min(0.0, float(c["start_s"]) - t0_ps * 1e-12)
    hi = max(span, float(c["end_s"]) - t0_ps * 1e-12)
    ax.set_xlim(lo - 0.02 * (hi - lo or 1e-9), hi + 0.02 * (hi - lo or 1e-9))
    _time_ticks(ax, hi - lo or span)
    ax.set_xlabel(f"{ax.get_xlabel()} since the first flow's start at "
                  f"{fmt_time(t0_ps * 1e-12)}")
    ax.set_ylabel("flow (src GPU (NIC port) -> dst GPU (NIC port))" +
                  (f", one in {every} labelled" if every > 1 else ""))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def weighted_cdf(values, weights):
    """(sorted values, cumulative fraction of the weights): a CDF that ends at 1."""
    import numpy as np
    order = np.argsort(values, kind="stable")
    w = np.cumsum(weights[order].astype(float))
    return values[order], w / w[-1]


def fct_figure(meta, tables, name, opts):
    """Flow completion time (end - start) CDF per group; a /flows row counts `repeats` times."""
    import matplotlib.pyplot as plt
    import numpy as np
    need_v2(opts.file, meta, "fct_cdf")
    flows = tables["flows"]
    ok = timed(flows)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = 0
    for gi, g in enumerate(GROUPS):
        sel = flows[ok & (flows["group"] == gi)]
        if not len(sel):
            continue
        fct_us = np.maximum((sel["end_ps"] - sel["start_ps"]) * 1e-6, 1e-6)
        x, y = weighted_cdf(fct_us, sel["repeats"].astype(np.int64))
        p50 = x[np.searchsorted(y, 0.5)]
        p99 = x[min(len(x) - 1, np.searchsorted(y, 0.99))]
        n = int(sel["repeats"].astype(np.int64).sum())
        ax.step(np.concatenate([[x[0]], x]), np.concatenate([[0.0], y]), where="post",
                color=GROUP_COLORS[gi], label=f"{g}: {n:,} flows, p50 {p50:.3g}, p99 {p99:.3g} us")
        drawn += 1
    title = "flow completion time (end - start) per group"
    if (~ok).sum():
        title += f"\n{int((~ok).sum())} /flows rows without times left out"
    ax.set_title(title, fontsize="medium")
    _finish_log_x(ax, drawn, "flow completion time (us)", "CDF (fraction of flows)",
                  f"no flow times recorded (this run: {meta['fidelity']} fidelity, "
                  f"{len(flows)} /flows rows)")
    if drawn:
        ax.set_ylim(0, 1.02)
    fig.suptitle(name, fontsize="medium")
    return fig, ax
