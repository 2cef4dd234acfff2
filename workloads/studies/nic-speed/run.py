#!/usr/bin/env python3
"""NIC-speed study: the same training steps (a dense and an MoE model) on 1,024 GPUs of GB300
NVL72-class racks (16 racks, 64 GPUs per NVLink domain, one NIC per GPU on 4 rails) and, for
reference, on 128 DGX H100-class servers (8 GPUs, 8 NICs on 8 rails), each with 400G, 800G and
1.6T NICs and ECMP, adaptive and spray load balancing, at cell fidelity. Writes results.md (one
table) and results.svg (step time per NIC speed) into the output directory.

Usage: workloads/studies/nic-speed/run.py [--stepsim build/apps/stepsim] [--out results/nic-speed]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PORTS = ["400G", "800G", "1.6T"]
LBS = ["ecmp", "adaptive", "spray"]
SYSTEMS = {
    # name: (gpu, topology template)
    "gb300": ("gb300", "kind: rail_optimized\n  servers: 256\n  gpus_per_server: 4\n"
                       "  nvlink_domain: 64\n  switch_radix: 144\n  tiers: 2\n"),
    "h100": ("h100", "kind: rail_optimized\n  servers: 128\n  gpus_per_server: 8\n"
                     "  switch_radix: 64\n  tiers: 2\n"),
}
MODELS = ["dense", "moe"]


def topology(out, system, port):
    path = os.path.join(out, f"{system}-{port}.yaml")
    with open(path, "w") as f:
        f.write(f"topology:\n  name: {system}-1024gpu-{port}\n  {SYSTEMS[system][1]}"
                f"  port: {port}\n")
    return path


def run(stepsim, out, model, system, port, lb):
    topo = topology(out, system, port)
    tag = f"{model}-{system}-{port}-{lb}"
    js = os.path.join(out, tag + ".json")
    cmd = [stepsim, "run", os.path.join(HERE, model + ".yaml"), "--output",
           os.path.join(out, tag + ".h5"), "--json", js, "--set", "topology=" + topo,
           "--set", "gpu.model=" + SYSTEMS[system][0], "--set", "fabric.lb=" + lb]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(js) as f:
        d = json.load(f)
    return {"step_s": d["step_s"], "ep_s": d["exposed_s"]["ep"], "dp_s": d["exposed_s"]["dp"],
            "tp_s": d["exposed_s"]["tp"], "pp_s": d["exposed_s"]["pp"]}


def svg(rows, path):
    # Step time per NIC speed (ECMP), one group of bars per model and system.
    w, h, left, top, bar = 640, 300, 60, 30, 22
    groups = [(m, s) for m in MODELS for s in SYSTEMS]
    colours = {"400G": "#9ecae1", "800G": "#4292c6", "1.6T": "#08519c"}
    base = {(m, s): rows[(m, s, "400G", "ecmp")]["step_s"] for m, s in groups}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">',
             f'<text x="{left}" y="18" font-size="13">Step time relative to 400G NICs (ECMP)</text>']
    plot_h = h - top - 50
    for i, (m, s) in enumerate(groups):
        x0 = left + i * (3 * bar + 40)
        for j, p in enumerate(PORTS):
            r = rows[(m, s, p, "ecmp")]["step_s"] / base[(m, s)]
            bh = plot_h * r
            x = x0 + j * bar
            y = top + plot_h - bh
            parts.append(f'<rect x="{x}" y="{y:.1f}" width="{bar - 2}" height="{bh:.1f}" '
                         f'fill="{colours[p]}"/>')
            parts.append(f'<text x="{x}" y="{y - 3:.1f}" font-size="9">{r:.2f}</text>')
        parts.append(f'<text x="{x0}" y="{top + plot_h + 16}" font-size="11">{m} {s}</text>')
    for j, p in enumerate(PORTS):
        parts.append(f'<rect x="{left + j * 70}" y="{h - 18}" width="10" height="10" '
                     f'fill="{colours[p]}"/><text x="{left + j * 70 + 14}" y="{h - 9}" '
                     f'font-size="11">{p}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stepsim", default="build/apps/stepsim")
    ap.add_argument("--out", default="results/nic-speed")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = {}
    for m in MODELS:
        for s in SYSTEMS:
            for p in PORTS:
                for lb in LBS:
                    rows[(m, s, p, lb)] = run(a.stepsim, a.out, m, s, p, lb)
                    print(m, s, p, lb, f"{rows[(m, s, p, lb)]['step_s']:.4f} s", flush=True)
    lines = ["| model | system | NIC | LB | step (s) | vs 400G ECMP | exposed EP (ms) | exposed DP (ms) "
             "| exposed TP (ms) | exposed PP (ms) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for m in MODELS:
        for s in SYSTEMS:
            b = rows[(m, s, "400G", "ecmp")]["step_s"]
            for p in PORTS:
                for lb in LBS:
                    r = rows[(m, s, p, lb)]
                    lines.append(f"| {m} | {s} | {p} | {lb} | {r['step_s']:.4f} | "
                                 f"{r['step_s'] / b:.3f} | {r['ep_s'] * 1e3:.1f} | "
                                 f"{r['dp_s'] * 1e3:.1f} | {r['tp_s'] * 1e3:.1f} | "
                                 f"{r['pp_s'] * 1e3:.1f} |")
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    svg(rows, os.path.join(a.out, "results.svg"))
    print(os.path.join(a.out, "results.md"))


if __name__ == "__main__":
    sys.exit(main())
