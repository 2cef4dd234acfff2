"""Checks a `stepsim run --trace` file (Chrome trace JSON, as Perfetto reads it): every stage's
process is named after its GPU, its threads are named, ops carry args (layer, micro, chunk;
communication ops their group), and the collectives of every group of the step appear as
async begin/end pairs with bytes and group, the DP and PP ones included (not only blocking
TP). Usage: trace_check.py TRACE.json; exit 0 when every check holds."""

import json
import sys


def main(path):
    events = json.load(open(path))["traceEvents"]
    fails = []
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    ops = [e for e in events if e["ph"] == "X"]
    begins = [e for e in events if e["ph"] == "b"]
    ends = {(e["pid"], e["id"]) for e in events if e["ph"] == "e"}
    stages = {e["pid"] for e in ops}
    if not stages or any("GPU" not in procs.get(s, "") for s in stages):
        fails.append(f"processes without a GPU name: {procs}")
    if any((s, 0) not in threads or (s, 1) not in threads for s in stages):
        fails.append("stages without named compute and wait threads")
    if any("layer" not in e.get("args", {}) for e in ops if e["cat"] in ("forward", "backward")):
        fails.append("compute ops without a layer arg")
    if any("group" not in e.get("args", {}) for e in ops if e["cat"] == "comm"):
        fails.append("communication ops without a group arg")
    groups = {e["args"]["group"] for e in begins}
    if not {"dp", "pp", "tp"} <= groups:
        fails.append(f"collectives of groups {sorted(groups)}, want dp, pp and tp")
    if any(e["args"].get("bytes", 0) <= 0 for e in begins):
        fails.append("collectives without bytes")
    if any((e["pid"], e["id"]) not in ends for e in begins):
        fails.append("a collective begins without an end")
    for f in fails:
        print(f"trace_check: {f}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
