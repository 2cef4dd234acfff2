#!/usr/bin/python3
"""Checks `stepsim bench fabric --samples` files against the run's per-port JSON counters.

usage: samples_check.py INTERVAL_PS RUN.json FILE.h5 [FILE.h5 ...]

For the first file: /samples/ports is ordered by (bin, port) without repeats and every row did
something; per port, bytes, paused_ps, ecn_marks, pause_sent and drops summed over bins equal the
whole-run counters, the largest queue_max_bytes is the port's max_queue, and every port with rows
has counters (and the other way round; a run that stopped early may have more paused time
in the samples: pauses still open at the end); no bin holds more bytes than the link carries in a bin; a bin is paused at most its length; /nodes names and tiers
and /ports peers agree with each other. Every further file must hold the same /nodes, /ports and
/samples (other rank and thread counts). Prints one line per failure; exit status 1 if any.
"""
import json
import sys

import h5py
import numpy as np

SLACK_BYTES = 2  # rounding: a frame's bytes are spread over its wire time, rounded down

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def main():
    interval_ps = int(sys.argv[1])
    run = json.load(open(sys.argv[2]))
    files = sys.argv[3:]
    f = h5py.File(files[0], "r")
    if int(f["samples"].attrs["interval_ps"]) != interval_ps:
        fail(f"interval_ps {f['samples'].attrs['interval_ps']} != {interval_ps}")
    s = f["samples/ports"][:]
    nodes = f["nodes"][:]
    ports = f["ports"][:]
    if len(s) == 0:
        fail("no samples")
        return
    if len(s) != run.get("samples_rows", -1):
        fail(f"{len(s)} rows, the report says {run.get('samples_rows')}")
    key = s["bin"].astype(np.uint64) << np.uint64(32) | s["port"].astype(np.uint64)
    if not np.all(key[1:] > key[:-1]):
        fail("rows are not strictly ordered by (bin, port)")
    fields = ["bytes", "queue_max_bytes", "paused_ps", "ecn_marks", "pause_sent", "drops"]
    if np.any(np.all(np.stack([s[x] == 0 for x in fields]), axis=0)):
        fail("a row where the port did nothing")
    counters = {p["port"]: p for p in run["ports"]}
    sampled = set(int(p) for p in np.unique(s["port"]))
    if sampled != set(counters):
        fail(f"ports with rows {sorted(sampled ^ set(counters))[:10]} differ from the counters'")
    sums = {
        "bytes": ("bytes", np.add),
        "paused_ps": ("paused_ps", np.add),
        "ecn_marks": ("ecn_marks", np.add),
        "pause_sent": ("pause_sent", np.add),
        "drops": ("drops", np.add),
        "queue_max_bytes": ("max_queue", np.maximum),
    }
    # A run stopped early (--end, a signal) may end inside pauses: the samples count them up to
    # the end, the counter only pauses that ended.
    stopped = not run["completed"]
    for p, c in counters.items():
        rows = s[s["port"] == p]
        for field, (counter, op) in sums.items():
            got = int(op.reduce(rows[field].astype(np.int64))) if len(rows) else 0
            want = int(c[counter])
            if got != want and not (stopped and field == "paused_ps" and got > want):
                fail(f"port {p}: {field} over bins {got} != whole-run {counter} {want}")
    if stopped and int(s["bin"].max()) * interval_ps >= run["end_ps"]:
        fail(f"a bin starts after the run's end ({run['end_ps']} ps)")
    # Physical bounds of one bin.
    rate = ports["rate_gbps"][s["port"]]
    # Frames (cells) are spread over their wire time, which includes preamble and gap.
    cap = rate * 1e9 / 8 * interval_ps * 1e-12 + SLACK_BYTES
    if stopped:  # a frame still on the wire at the stop counts whole in the last bin
        last_frame = 10000 + (run.get("cell_bytes", 0) if run.get("fidelity") == "cell" else 0)
        cap = np.where(s["bin"] == s["bin"].max(), cap + last_frame, cap)
    if np.any(s["bytes"] > cap):
        i = int(np.argmax(s["bytes"] - cap))
        fail(f"bin {s['bin'][i]} port {s['port'][i]}: {s['bytes'][i]} B, more than the link "
             f"carries in a bin ({cap[i]:.0f})")
    if np.any(s["paused_ps"] > interval_ps) or np.any(s["paused_ps"] < 0):
        fail("a bin paused longer than the bin or negative")
    if run["pause_frames"] > 0 and s["paused_ps"].sum() == 0:
        fail("PAUSE frames but no paused time in the samples")
    # Name tables.
    if list(nodes["node"]) != list(range(len(nodes))) or list(ports["port"]) != list(
            range(len(ports))):
        fail("/nodes or /ports ids are not 0..n-1")
    tier_prefix = {0: b"server-", 1: b"leaf-", 2: b"spine-", 3: b"core-"}
    for n in nodes:
        want = tier_prefix.get(int(n["tier"]))
        if want is not None and not n["name"].startswith(want):
            fail(f"node {n['node']} named {n['name']} in tier {n['tier']}")
    if len(set(nodes["name"])) != len(nodes):
        fail("node names are not unique")
    for p in ports:
        if p["peer"] != 0xFFFFFFFF and ports["peer"][p["peer"]] != p["port"]:
            fail(f"port {p['port']}: its peer's peer is not itself")
    servers = set(int(n["node"]) for n in nodes if n["tier"] == 0)
    nic_rows = [r for r in s if int(ports["node"][r["port"]]) in servers]
    if run["packet_hops"] > 0 and not nic_rows:
        fail("no rows for server (NIC) ports")
    for other in files[1:]:
        g = h5py.File(other, "r")
        for name in ["nodes", "ports", "samples/ports"]:
            if g[name].dtype != f[name].dtype or not np.array_equal(g[name][:], f[name][:]):
                fail(f"{other}: /{name} differs from {files[0]}")
    print(f"{files[0]}: {len(s)} rows, {len(counters)} ports, "
          f"{int(s['bin'].max()) + 1} bins; {len(files)} files compared")


main()
sys.exit(1 if failures else 0)
