"""`stepsim plan`'s CSV: step time against memory peak for every layout."""

import os

from ..compare import _number
from ..files import regular_file
from ..schema import UserError


def plan_figure(path):
    """`stepsim plan`'s CSV: every layout's step time (analytical) against its memory peak, the
    confirmed ones marked at their confirmed step time, the GPU's capacity as a vertical line."""
    import csv
    import matplotlib.pyplot as plt
    regular_file(path)
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})")
    need = ["memory_peak_gb", "step_s", "fits", "capacity_gb", "confirmed", "confirmed_step_s"]
    if not rows or any(c not in rows[0] for c in need):
        raise UserError(f"{path}: not a stepsim plan CSV (needs the columns {', '.join(need)})")
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for fits, color, label in (("true", "#1f77b4", "fits"), ("false", "#bbbbbb", "does not fit")):
        pts = [(float(r["memory_peak_gb"]), float(r["step_s"])) for r in rows
               if r["fits"] == fits and _number(r["step_s"])]
        if pts:
            ax.scatter([x for x, _ in pts], [y for _, y in pts], s=6, c=color, alpha=0.6,
                       label=f"{label} ({len(pts):,} layouts, analytical)", linewidths=0)
    conf = [r for r in rows if r["confirmed"] == "true" and _number(r["confirmed_step_s"])]
    if conf:
        fid = conf[0].get("confirm_fidelity", "confirming")
        ax.scatter([float(r["memory_peak_gb"]) for r in conf],
                   [float(r["confirmed_step_s"]) for r in conf], marker="*", s=120, c="#d62728",
                   label=f"confirmed at {fid} fidelity ({len(conf)})", zorder=3)
        for r in conf:
            ax.annotate(f'#{r["confirmed_rank"]}', (float(r["memory_peak_gb"]),
                                                   float(r["confirmed_step_s"])),
                        textcoords="offset points", xytext=(5, 4), fontsize=8)
    cap = float(rows[0]["capacity_gb"])
    ax.axvline(cap, color="#d62728", linestyle="--", linewidth=1,
               label=f"HBM capacity {cap:.0f} GB")
    ax.set_xlabel("memory peak per GPU (GB, the peak stage)")
    ax.set_ylabel("step time (s)")
    ax.set_yscale("log")
    ax.set_title(f"stepsim plan: {os.path.basename(path)}")
    ax.legend(fontsize=8, loc="best")
    return fig
