"""`stepsim-post report`: the rows of one step (also compare's rows)."""

import os

from .fabric import fabric_of
from .schema import GROUPS, finished, load


def fmt_time(s):
    if s >= 1:
        return f"{s:.4f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.3f} us"


def percentile(sorted_values, q):
    """Nearest-rank percentile of a sorted array (as stepsim prints them)."""
    import numpy as np
    n = len(sorted_values)
    return float(sorted_values[max(0, int(np.ceil(q * n)) - 1)])


def group_stats(colls):
    """Per group: count, mean busbw (GB/s), bytes, p50/p99 time (us)."""
    import numpy as np
    out = {}
    for gi, g in enumerate(GROUPS):
        sel = colls[(colls["group"] == gi) & finished(colls)]
        if len(sel) == 0:
            continue
        t = np.sort((sel["end_s"] - sel["start_s"]) * 1e6)
        out[g] = {
            "count": len(sel),
            "busbw": float(sel["busbw_gbs"].mean()),
            "bytes": float(sel["bytes"].sum()),
            "p50_us": percentile(t, 0.5),
            "p99_us": percentile(t, 0.99),
        }
    return out


def run_name(path, meta):
    """The name every plot and table carries: file stem, model, topology, GPUs, fidelity."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return (f'{stem}: {meta["model"]} on {meta["topology"]}, {int(float(meta["gpus"]))} '
            f'{meta["gpu"]}, {meta["fidelity"]} fidelity')


# What a partial step prints instead of its MFU and tokens/s (as stepsim's summary does): the
# whole step's FLOPs or tokens over part of its time would overstate them.
NOT_COMPLETE = "n/a (the step did not complete)"
PARTIAL = "PARTIAL"


def column_name(path, meta):
    """A step's column header in report and compare: the file, marked when partial."""
    return f"{path} ({PARTIAL})" if meta.get("partial") else path


def headline_rows(meta, tables):
    """complete, step time, tokens/s (per GPU and the cluster's) and MFU, each job's."""
    partial = meta.get("partial", False)
    step = float(meta["step_s"])
    gpus = float(meta["gpus"])
    status = meta.get("status")
    status = status.decode() if isinstance(status, bytes) else status
    why = f", {status}" if status and status != "complete" else ""
    rows = [("complete", f"NO (stopped early{why}): {PARTIAL} result, no MFU or tokens/s"
             if partial else "yes", None)]
    if partial:  # the time simulated before the stop: no step time to compare
        rows.append(("step time", f"{fmt_time(step)} simulated ({PARTIAL}: stopped early)",
                     None))
    else:
        rows.append(("step time", fmt_time(step), step))
    tokens = float(meta.get("tokens_per_step", 0) or 0)
    if partial:
        rows += [("tokens/s per GPU", NOT_COMPLETE, None),
                 ("tokens/s (cluster)", NOT_COMPLETE, None)]
    elif tokens > 0 and step > 0:
        rate = tokens / step
        if gpus > 0:
            rows.append(("tokens/s per GPU", f"{rate / gpus:,.4g}", rate / gpus))
        rows.append(("tokens/s (cluster)", f"{rate:,.0f}", rate))
    else:
        rows.append(("tokens/s (cluster)", "not recorded (file without tokens_per_step)", None))
    mfu = float(meta["mfu"])
    rows.append(("MFU", NOT_COMPLETE, None) if partial or mfu != mfu
                else ("MFU", f"{100 * mfu:.2f} %", mfu))
    for j in tables.get("jobs") if tables.get("jobs") is not None else []:
        name = j["name"].decode() if isinstance(j["name"], bytes) else str(j["name"])
        name = name.rstrip("\0")
        js, jm = float(j["step_s"]), float(j["mfu"])
        if partial:
            rows.append((f"job {name} step time", f"{fmt_time(js)} simulated ({PARTIAL})",
                         None))
            rows.append((f"job {name} MFU", NOT_COMPLETE, None))
        else:
            rows.append((f"job {name} step time", fmt_time(js), js))
            rows.append((f"job {name} MFU", f"{100 * jm:.2f} %", jm))
    return rows


def summary_rows(path, meta, tables):
    """(label, text, number or None) rows of a step, the same for report and compare; the
    number is what compare divides (None: no ratio, as for a partial step's figures)."""
    fid = meta["fidelity"]
    rows = [("model", meta["model"], None), ("topology", meta["topology"], None),
            ("GPUs", f'{int(float(meta["gpus"]))} {meta["gpu"]}', None),
            ("fidelity", fid, None),
            ("overrides (--set)", ", ".join(l for l in str(meta.get("sets", "")).splitlines()
                                            if l) or "none", None)]
    rows += headline_rows(meta, tables)
    rows.append(("compute", fmt_time(float(meta["compute_s"])), float(meta["compute_s"])))
    for g in GROUPS:
        v = float(meta.get(f"exposed_{g}_s", 0.0))
        if v > 0:
            rows.append((f"exposed {g}", fmt_time(v), v))
    rows.append(("pipeline bubble", fmt_time(float(meta["bubble_s"])), float(meta["bubble_s"])))
    rows.append(("optimizer", fmt_time(float(meta["optimizer_s"])), float(meta["optimizer_s"])))
    for g, st in group_stats(tables["collectives"]).items():
        rows.append((f"busbw {g}", f'{st["busbw"]:.2f} GB/s ({st["count"]} collectives)',
                     st["busbw"]))
        rows.append((f"collective time {g} p50/p99",
                     f'{st["p50_us"]:.2f} / {st["p99_us"]:.2f} us', st["p99_us"]))
    rows += network_rows(meta, tables)
    rows += sample_rows(path, meta, tables)
    return rows


def sample_rows(path, meta, tables, busiest=3):
    """The /flows row count and, from /samples, the busiest links (mean and largest
    utilisation over the sampled time) by name."""
    import numpy as np
    flows = tables["flows"]
    stands = int(flows["repeats"].astype(np.int64).sum()) if len(flows) else 0
    text = f"{len(flows):,}"
    if stands != len(flows):
        text += f" (standing for {stands:,} flows)"
    sampling = tables.get("flows_sampling")
    if sampling and sampling["sample"] == 0:
        text += " (output.flows none)"
    elif sampling and sampling["sample"] > 1:
        text += (f" of {sampling['rows_total']:,} (output.flows: one collective in "
                 f"{sampling['sample']})")
    rows = [("flows (rows)", text, float(len(flows)))]
    samples = tables.get("samples")
    if samples is None:
        return rows
    fabric = fabric_of(path, tables, "the report's busiest links")
    pp = samples.per_port(fabric)
    span_s = pp["bins"] * samples.interval_s
    rows.append(("samples", f"{pp['bins']:,} bins of {fmt_time(samples.interval_s)} "
                            f"({samples.rows:,} port rows)", None))
    rate = fabric.rate_gbps * 1e9
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(rate > 0, pp["bytes"] * 8 / (rate * span_s) if span_s > 0 else 0, 0)
        peak = np.where(rate > 0, pp["peak_bytes"] * 8 / (rate * samples.interval_s), 0)
    order = [int(i) for i in np.argsort(-mean, kind="stable")[:busiest] if mean[i] > 0]
    if not order:
        rows.append(("busiest sampled link 1", "no link carried bytes in /samples", None))
    for rank, port in enumerate(order, 1):
        rows.append((f"busiest sampled link {rank}",
                     f"{fabric.label(port)} -> {fabric.peer_label(port)}: mean "
                     f"{100 * mean[port]:.1f} %, max {100 * peak[port]:.1f} % "
                     f"({fabric.rate_gbps[port]:g} Gb/s)", float(mean[port])))
    return rows


def network_rows(meta, tables):
    """FCT percentiles, ECN, retransmissions, drops, PFC: recorded at packet fidelity only."""
    fid = meta["fidelity"]
    flows, links = tables["flows"], tables["links"]
    if "fct_p50_us" in meta and float(meta.get("messages", 0) or 0) > 0:
        p50, p99, pmax = (float(meta[k]) for k in ("fct_p50_us", "fct_p99_us", "fct_max_us"))
        rows = [("message FCT p50/p99/max", f"{p50:.2f} / {p99:.2f} / {pmax:.2f} us", p99)]
    else:
        why = ("none recorded (the step stopped early)" if meta.get("partial")
               else f"not recorded at {fid} fidelity (packet only)")
        rows = [("message FCT p50/p99/max", why, None)]
    if len(flows) == 0 and len(links) == 0:
        why = ("none recorded (the step stopped early)" if meta.get("partial")
               else f"not recorded at {fid} fidelity (/flows and /links: packet only)")
        rows.append(("ECN, retransmissions", why, None))
        return rows
    rep = flows["repeats"].astype(float)
    retx = float((flows["retransmitted"] * rep).sum())
    ecn_rx = float((flows["ecn_marked"] * rep).sum())
    k = meta.get("flows_sample", 1)
    of = "" if k == 1 else f" (the flows of 1 in {k} collectives)"
    rows.append(("retransmitted packets", f"{retx:,.0f}{of}", retx))
    rows.append(("ECN-marked packets", f"{ecn_rx:,.0f} received{of}, "
                                       f'{float(links["ecn_marks"].sum()):,.0f} marks at switches',
                 ecn_rx))
    if len(links):
        step = float(meta["step_s"])
        util = links["busy_s"] / step if step > 0 else links["busy_s"] * 0
        rows.append(("busiest link", f"{100 * float(util.max()):.1f} % of the step "
                                     f'(port {int(links["port"][util.argmax()])})',
                     float(util.max())))
        rows.append(("drops", f'{int(links["drops"].sum())}', float(links["drops"].sum())))
        paused = float(links["paused_s"].sum())
        rows.append(("PFC pause", fmt_time(paused), paused))
    return rows


def print_table(header, rows, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(str(x) for x in r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())


def cmd_report(args):
    meta, tables = load(args.file)
    rows = summary_rows(args.file, meta, tables)
    if args.markdown:
        mark = f" ({PARTIAL}: stopped early)" if meta["partial"] else ""
        print(f"# stepsim step: {run_name(args.file, meta)}{mark}\n")
    print_table(["", column_name(args.file, meta)], [[label, text] for label, text, _ in rows],
                args.markdown)
    return 0
