"""Checks a whole-step `stepsim run --trace` file (Chrome trace JSON, as Perfetto reads it)
against the GPUs it should show: one process per GPU of GPUS (a comma list), named after it,
and no other; each with its compute ops; a GPU's blocking (compute-stream) TP collectives
never overlap in time (every replica's TP collectives on one process would); the GPUs of one
TP group see the same number of TP collectives; every begin has its end on the same process.
With --cap N: at most N ops and collective events, the note in otherData and as a global
instant event at the cut, and no kept event starting after the cut; without it, no note.
Usage: trace_gpus_check.py TRACE.json GPUS [--cap N] [--tp-group G,G,...]; exit 0 when every
check holds."""

import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("gpus")
    ap.add_argument("--cap", type=int, default=0)
    ap.add_argument("--tp-group", default="")
    a = ap.parse_args()
    doc = json.load(open(a.trace))
    events = doc["traceEvents"]
    want = {int(g) for g in a.gpus.split(",")}
    fails = []
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    if set(procs) != want:
        fails.append(f"processes {sorted(procs)}, want {sorted(want)}")
    for pid, name in procs.items():
        if not name.startswith(f"GPU {pid} "):
            fails.append(f"process {pid} is named '{name}', not after GPU {pid}")
    ops = [e for e in events if e["ph"] == "X"]
    begins = [e for e in events if e["ph"] == "b"]
    ends = {(e["pid"], e["id"]): e for e in events if e["ph"] == "e"}
    if any(e["pid"] not in want for e in ops + begins):
        fails.append("events on a process of a GPU not selected")
    if not a.cap:
        for pid in want:
            cats = {e["cat"] for e in ops if e["pid"] == pid}
            if not {"forward", "backward"} <= cats:
                fails.append(f"GPU {pid}: ops of kinds {sorted(cats)}, want forward and backward")
    for b in begins:
        if (b["pid"], b["id"]) not in ends:
            fails.append(f"collective {b['args']['id']} on GPU {b['pid']} begins without an end")
            break
    ids = [(b["pid"], b["id"]) for b in begins]
    if len(ids) != len(set(ids)):
        fails.append("two collectives share an id on one process")
    tp_count = {}
    for pid in want:
        tp = sorted((b["ts"], ends[(pid, b["id"])]["ts"]) for b in begins
                    if b["pid"] == pid and b["args"]["group"] == "tp" and (pid, b["id"]) in ends)
        tp_count[pid] = len(tp)
        for (s0, e0), (s1, _) in zip(tp, tp[1:]):
            if s1 < e0 - 1e-6:
                fails.append(f"GPU {pid}: TP collectives overlap ({s0}-{e0} us and one at {s1} us)")
                break
    if a.tp_group:
        group = [int(g) for g in a.tp_group.split(",")]
        counts = {g: tp_count.get(g, 0) for g in group}
        if len(set(counts.values())) != 1 or not min(counts.values()):
            fails.append(f"TP collectives per GPU of one TP group differ or are none: {counts}")
    note = doc.get("otherData", {}).get("note", "")
    cuts = [e for e in events if e["ph"] == "i"]
    kept = len(ops) + len(begins) + len(ends)
    if a.cap:
        if kept > a.cap:
            fails.append(f"{kept} events kept over a cap of {a.cap}")
        if "--trace-max-events" not in note or len(cuts) != 1 or cuts[0].get("s") != "g":
            fails.append(f"no cut note: otherData {doc.get('otherData')}, instants {cuts}")
        elif any(e["ts"] > cuts[0]["ts"] for e in ops + begins):
            fails.append("an event kept starts after the cut")
    elif note or cuts:
        fails.append(f"a note without a cap: {note} {cuts}")
    for f in fails:
        print(f"trace_gpus_check: {f}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
