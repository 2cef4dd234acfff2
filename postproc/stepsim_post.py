"""Post-processing of stepsim's HDF5 step files (docs/hdf5-schema.md).

    stepsim-post report FILE.h5 [--markdown]     summary of one step
    stepsim-post plot FILE.h5 [KIND ...] [-o DIR] [--collective ID] [--tier TIER[,TIER]]
                      [--top K] [--max-ports N]  PNG plots (KIND: see PLOT_KINDS; default:
                                                 every plot the file has data for)
    stepsim-post plot PLAN.csv [-o DIR]         `stepsim plan`'s table: step time against
                                                 memory peak, confirmed layouts marked
    stepsim-post compare A.h5 B.h5 [C.h5 ...] [--markdown | --csv]
                                                 steps side by side, a column per variant and
                                                 its ratio to the first (or a sweep's CSV:
                                                 a column per row)

Runs with Debian's /usr/bin/python3 (h5py, numpy, matplotlib). Exit codes: 0 done, 2 a bad
argument or file (one message on stderr).
"""

import argparse
import os
import sys

# Schema versions this tool reads. Version 2 adds flow times and GPUs to /flows, the /nodes and
# /ports name tables and the /samples time series; the plots that need them refuse version 1.
# Version 3 adds a job column to /ops, /collectives and /flows and the /jobs table (jobs:).
SCHEMA_VERSIONS = (1, 2, 3)
GROUPS = ["tp", "cp", "ep", "pp", "dp"]
GROUP_COLORS = {0: "#7f7f7f", 1: "#2ca02c", 2: "#ff7f0e", 3: "#9467bd", 4: "#1f77b4"}
KINDS = ["allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall",
         "alltoallv", "sendrecv", "send"]
OP_KINDS = ["forward", "backward", "optimizer", "comm", "wait"]
TIERS = ["server", "leaf", "spine", "core"]
# The op timeline's colours: compute (forward, backward) in blues, the optimizer purple,
# blocking communication red, waiting for another stage light gray.
OP_COLORS = {0: "#1f77b4", 1: "#6baed6", 2: "#9467bd", 3: "#d62728", 4: "#d9d9d9"}
# The op timeline's two lanes per stage (y offsets from the stage's row): compute on top, the
# blocking communication and waits below, so that neither can cover the other.
COMPUTE_LANE = (-0.02, 0.4)
COMM_LANE = (-0.38, 0.3)

# What every step file has (docs/hdf5-schema.md): /meta attributes and each table's columns.
META_REQUIRED = ["schema_version", "model", "topology", "gpu", "gpus", "fidelity", "complete",
                 "step_s", "mfu", "compute_s", "bubble_s", "optimizer_s"]
TABLES = {
    "ops": ["stage", "kind", "group", "start_s", "end_s"],
    "collectives": ["stage", "group", "kind", "gpus", "bytes", "start_s", "end_s", "busbw_gbs"],
    "flows": ["collective", "repeats", "bytes", "packets", "retransmitted", "ecn_marked"],
    "links": ["port", "node", "tier", "bytes", "ecn_marks", "drops", "busy_s", "paused_s"],
}
# Schema version 2: /flows' further columns (times in ps, -1 unknown), the name tables (read
# when present; the plots that need them say so when absent) and the time series.
FLOWS_V2 = ["src_nic", "dst_nic", "src_gpu", "dst_gpu", "group", "kind", "messages",
            "start_ps", "first_byte_ps", "end_ps"]
TABLES_V2 = {
    "nodes": ["node", "name", "tier"],
    "ports": ["port", "node", "index", "peer", "rate_gbps"],
}
SAMPLE_COLUMNS = ["bin", "port", "bytes", "queue_max_bytes", "paused_ps", "ecn_marks",
                  "pause_sent", "drops"]
NO_PEER = 0xFFFFFFFF
# Rows of /samples/ports read at a time (the time series of a large run does not fit in memory).
SAMPLE_CHUNK = 1 << 20


class UserError(Exception):
    pass


def _attr_text(path, name, value):
    """An attribute as text or a number; bytes that are not UTF-8 are a user error."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{path}: /meta attribute '{name}' is not UTF-8 text")
    if hasattr(value, "shape") and value.shape == ():
        value = value[()]
        if isinstance(value, bytes):
            return _attr_text(path, name, value)
    return value


def _read_meta(path, f):
    import h5py
    if "meta" not in f:
        raise UserError(f"{path}: no /meta group: not a stepsim step file")
    if not isinstance(f["meta"], h5py.Group):
        raise UserError(f"{path}: /meta is a dataset, not a group of attributes")
    meta = {}
    for k in f["meta"].attrs.keys():
        try:
            v = f["meta"].attrs[k]
        except UnicodeDecodeError:
            raise UserError(f"{path}: /meta attribute '{k}' is not UTF-8 text")
        except (OSError, TypeError, ValueError) as e:
            raise UserError(f"{path}: /meta attribute '{k}' cannot be read ({e})")
        meta[k] = _attr_text(path, k, v)
    missing = [k for k in META_REQUIRED if k not in meta]
    if missing:
        raise UserError(f"{path}: /meta lacks attribute(s) {', '.join(missing)} "
                        "(docs/hdf5-schema.md lists them)")
    for k in META_REQUIRED:
        if k in ("model", "topology", "gpu", "fidelity"):
            continue
        try:
            float(meta[k])
        except (TypeError, ValueError):
            raise UserError(f"{path}: /meta attribute '{k}' is not a number ({meta[k]!r})")
    version = int(float(meta["schema_version"]))
    if version not in SCHEMA_VERSIONS:
        raise UserError(f"{path}: schema version {version}, this tool reads "
                        f"{' and '.join(str(v) for v in SCHEMA_VERSIONS)}")
    meta["schema_version"] = version
    return meta


def _read_table(path, f, name, columns):
    """The table /name (a structured dataset) with at least `columns`."""
    import h5py
    if name not in f:
        raise UserError(f"{path}: no /{name} table (docs/hdf5-schema.md)")
    obj = f[name]
    if not isinstance(obj, h5py.Dataset):
        raise UserError(f"{path}: /{name} is a group, not a table")
    try:
        data = obj[()]
    except (OSError, TypeError, ValueError) as e:
        raise UserError(f"{path}: /{name} cannot be read ({e})")
    names = data.dtype.names or ()
    missing = [c for c in columns if c not in names]
    if missing:
        raise UserError(f"{path}: /{name} lacks column(s) {', '.join(missing)}")
    return data


class Samples:
    """/samples (schema version 2): the sparse per-port time series, read in chunks of rows
    when a plot or the report needs it (a large run's series does not fit in memory)."""

    def __init__(self, path, interval_ps, rows):
        self.path, self.interval_ps, self.rows = path, interval_ps, rows
        self.interval_s = interval_ps * 1e-12
        self._per_port = None

    def chunks(self, fields):
        """Structured arrays of `fields`, SAMPLE_CHUNK rows at a time."""
        import h5py
        with h5py.File(self.path, "r") as f:
            ds = f["samples/ports"]
            for a in range(0, self.rows, SAMPLE_CHUNK):
                try:
                    yield ds.fields(fields)[a:min(self.rows, a + SAMPLE_CHUNK)]
                except (OSError, TypeError, ValueError) as e:
                    raise UserError(f"{self.path}: /samples/ports cannot be read ({e})")

    def per_port(self, fabric):
        """Per port id (arrays over fabric.port_count ids): bytes, largest bytes in one bin,
        largest queue, paused ps, pause frames sent, ECN marks, drops; and the bins covered."""
        import numpy as np
        if self._per_port is not None:
            return self._per_port
        n = fabric.port_count
        acc = {k: np.zeros(n) for k in ("bytes", "peak_bytes", "queue_max", "paused_ps",
                                         "pause_sent", "ecn_marks", "drops")}
        bins = 0
        for c in self.chunks(SAMPLE_COLUMNS):
            if not len(c):
                continue
            port = c["port"].astype(np.int64)
            fabric.check_ports(port, "/samples/ports")
            bins = max(bins, int(c["bin"].max()) + 1)
            for k, col in (("bytes", "bytes"), ("paused_ps", "paused_ps"),
                           ("pause_sent", "pause_sent"), ("ecn_marks", "ecn_marks"),
                           ("drops", "drops")):
                acc[k] += np.bincount(port, weights=c[col].astype(float), minlength=n)
            np.maximum.at(acc["peak_bytes"], port, c["bytes"].astype(float))
            np.maximum.at(acc["queue_max"], port, c["queue_max_bytes"].astype(float))
        acc["bins"] = bins
        self._per_port = acc
        return acc

    def matrix(self, fabric, ports, field, reduce, factor):
        """Rows `ports` (ids) x columns of `factor` bins: `field` summed or maximised."""
        import numpy as np
        bins = self.per_port(fabric)["bins"]
        cols = max(1, -(-bins // factor))
        row_of = np.full(fabric.port_count, -1, dtype=np.int64)
        row_of[np.asarray(ports, dtype=np.int64)] = np.arange(len(ports))
        out = np.zeros(len(ports) * cols)
        for c in self.chunks(["bin", "port", field]):
            row = row_of[c["port"].astype(np.int64)]
            keep = row >= 0
            idx = row[keep] * cols + c["bin"][keep].astype(np.int64) // factor
            v = c[field][keep].astype(float)
            if reduce == "sum":
                out += np.bincount(idx, weights=v, minlength=len(out))
            else:
                np.maximum.at(out, idx, v)
        return out.reshape(len(ports), cols)


def _read_samples(path, f):
    import h5py
    import numpy as np
    g = f["samples"]
    if not isinstance(g, h5py.Group):
        raise UserError(f"{path}: /samples is a dataset, not a group (docs/hdf5-schema.md)")
    if "interval_ps" not in g.attrs:
        raise UserError(f"{path}: /samples lacks attribute interval_ps (docs/hdf5-schema.md)")
    try:
        interval = np.asarray(g.attrs["interval_ps"]).reshape(-1)
        interval_ps = int(interval[0]) if interval.size == 1 and \
            np.issubdtype(interval.dtype, np.number) else None
    except (OSError, TypeError, ValueError):
        interval_ps = None
    if not interval_ps or interval_ps <= 0:
        raise UserError(f"{path}: /samples attribute interval_ps is not a positive number of "
                        f"picoseconds")
    if "ports" not in g:
        raise UserError(f"{path}: no /samples/ports table (docs/hdf5-schema.md)")
    ds = g["ports"]
    if not isinstance(ds, h5py.Dataset):
        raise UserError(f"{path}: /samples/ports is a group, not a table")
    names = ds.dtype.names or ()
    missing = [c for c in SAMPLE_COLUMNS if c not in names]
    if missing:
        raise UserError(f"{path}: /samples/ports lacks column(s) {', '.join(missing)}")
    return Samples(path, interval_ps, int(ds.shape[0]) if ds.shape else 0)


def _flows_sampling(f):
    """/flows attributes rows_total and sample (output.flows: 1 all, K one in K collectives,
    0 none) when the writer recorded them, else None."""
    import numpy as np
    attrs = f["flows"].attrs
    if "rows_total" not in attrs or "sample" not in attrs:
        return None
    try:
        return {k: int(np.asarray(attrs[k]).reshape(-1)[0]) for k in ("rows_total", "sample")}
    except (TypeError, ValueError, IndexError):
        return None


def load(path):
    """The file's /meta attributes and tables as numpy structured arrays. Schema version 2:
    also "nodes" and "ports" (None when absent) and "samples" (a Samples or None); version 1
    has none of them."""
    try:
        import h5py
    except ImportError:
        raise UserError("h5py is missing: run with Debian's /usr/bin/python3 "
                        "(apt-get install python3-h5py)")
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a directory, not an HDF5 file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise UserError(f"{path}: not an HDF5 file ({e})")
    with f:
        meta = _read_meta(path, f)
        v2 = meta["schema_version"] >= 2
        tables = {name: _read_table(path, f, name, cols + (FLOWS_V2 if v2 and name == "flows"
                                                             else []))
                  for name, cols in TABLES.items()}
        for name, cols in TABLES_V2.items():
            tables[name] = _read_table(path, f, name, cols) if v2 and name in f else None
        tables["flows_sampling"] = _flows_sampling(f) if v2 else None
        tables["samples"] = _read_samples(path, f) if v2 and "samples" in f else None
        # Schema version 3: /jobs, a scenario with several jobs (jobs:) only.
        tables["jobs"] = f["jobs"][:] if "jobs" in f else None
        # output.flows: 1 every flow row, K the flows of 1 in K collectives, 0 none.
        meta["flows_sample"] = (tables["flows_sampling"] or {}).get("sample", 1)
    return meta, tables


class Fabric:
    """Names of nodes and ports from /nodes and /ports (schema version 2): 'leaf0/p3'."""

    def __init__(self, path, nodes, ports):
        import numpy as np
        self.path = path
        self.port_count = int(ports["port"].max()) + 1 if len(ports) else 0
        node_count = int(nodes["node"].max()) + 1 if len(nodes) else 0
        self.node_name = [f"node{i}" for i in range(node_count)]
        self.node_tier = np.zeros(node_count, dtype=np.int64)
        for n, name, tier in zip(nodes["node"], nodes["name"], nodes["tier"]):
            text = bytes(name).rstrip(b"\0").decode("utf-8", "replace") \
                if isinstance(name, (bytes, np.bytes_)) else str(name)
            self.node_name[int(n)] = text or f"node{int(n)}"
            self.node_tier[int(n)] = int(tier)
        self.known = np.zeros(self.port_count, dtype=bool)
        self.node = np.zeros(self.port_count, dtype=np.int64)
        self.index = np.zeros(self.port_count, dtype=np.int64)
        self.peer = np.full(self.port_count, NO_PEER, dtype=np.int64)
        self.rate_gbps = np.zeros(self.port_count)
        p = ports["port"].astype(np.int64)
        self.known[p] = True
        self.node[p] = ports["node"]
        self.index[p] = ports["index"]
        self.peer[p] = ports["peer"]
        self.rate_gbps[p] = ports["rate_gbps"]
        bad = self.node[p] >= node_count
        if bad.any():
            raise UserError(f"{path}: /ports row of port {int(p[bad][0])} names node "
                            f"{int(self.node[p][bad][0])}, which /nodes lacks")
        self.tier = self.node_tier[self.node]

    def check_ports(self, ports, where):
        import numpy as np
        bad = (ports >= self.port_count) | ~self.known[np.minimum(ports, self.port_count - 1)] \
            if self.port_count else np.ones(len(ports), dtype=bool)
        if bad.any():
            raise UserError(f"{self.path}: {where} names port {int(ports[bad][0])}, which "
                            f"/ports lacks")

    def label(self, port):
        port = int(port)
        if 0 <= port < self.port_count and self.known[port]:
            return f"{self.node_name[self.node[port]]}/p{int(self.index[port])}"
        return f"port {port}"

    def peer_label(self, port):
        peer = int(self.peer[int(port)])
        return self.label(peer) if peer != NO_PEER else "(no peer)"


def fabric_of(path, tables, what):
    """The file's Fabric; `what` (a plot or report line) needs /nodes and /ports."""
    for name in ("nodes", "ports"):
        if tables.get(name) is None:
            raise UserError(f"{path}: no /{name} table: {what} needs the node and port names "
                            f"(schema version 2, docs/hdf5-schema.md)")
    if "_fabric" not in tables:
        tables["_fabric"] = Fabric(path, tables["nodes"], tables["ports"])
    return tables["_fabric"]


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
        sel = colls[colls["group"] == gi]
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


def summary_rows(path, meta, tables):
    """(label, text, number or None) rows of a step, the same for report and compare; the
    number is what compare divides."""
    fid = meta["fidelity"]
    step = float(meta["step_s"])
    rows = [("model", meta["model"], None), ("topology", meta["topology"], None),
            ("GPUs", f'{int(float(meta["gpus"]))} {meta["gpu"]}', None),
            ("fidelity", fid, None),
            ("overrides (--set)", ", ".join(l for l in str(meta.get("sets", "")).splitlines()
                                            if l) or "none", None),
            ("complete", "yes" if int(float(meta["complete"])) else "NO (stopped early)", None),
            ("step time", fmt_time(step), step)]
    tokens = float(meta.get("tokens_per_step", 0) or 0)
    if tokens > 0 and step > 0:
        rows.append(("tokens/s", f"{tokens / step:,.0f}", tokens / step))
    else:
        rows.append(("tokens/s", "not recorded (file without tokens_per_step)", None))
    mfu = float(meta["mfu"])
    rows.append(("MFU", f"{100 * mfu:.2f} %", mfu))
    for j in tables.get("jobs") if tables.get("jobs") is not None else []:
        name = j["name"].decode() if isinstance(j["name"], bytes) else str(j["name"])
        js = float(j["step_s"])
        rows.append((f"job {name} step time", fmt_time(js), js))
        rows.append((f"job {name} MFU", f'{100 * float(j["mfu"]):.2f} %', float(j["mfu"])))
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
        rows.append((f"time {g} p50/p99", f'{st["p50_us"]:.2f} / {st["p99_us"]:.2f} us',
                     st["p99_us"]))
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
        rows = [("FCT p50/p99/max", f"{p50:.2f} / {p99:.2f} / {pmax:.2f} us", p99)]
    else:
        rows = [("FCT p50/p99/max", f"not recorded at {fid} fidelity (packet only)", None)]
    if len(flows) == 0 and len(links) == 0:
        rows.append(("ECN, retransmissions",
                     f"not recorded at {fid} fidelity (/flows and /links: packet only)", None))
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
        print(f"# stepsim step: {run_name(args.file, meta)}\n")
    print_table(["", args.file], [[label, text] for label, text, _ in rows], args.markdown)
    return 0


def _number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v else None  # NaN: not a number to divide


def _csv_rows(path):
    """The variants of a sweep's (or plan's) CSV: [(name, [(label, text, number)])]."""
    import csv
    try:
        with open(path, newline="") as f:
            table = list(csv.DictReader(f))
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})")
    except csv.Error as e:
        raise UserError(f"{path}: not a CSV table ({e})")
    if not table:
        raise UserError(f"{path}: no rows (a sweep's CSV has a row per variant)")
    out = []
    for k, row in enumerate(table, 1):
        axes = [f"{c[4:].split('.')[-1]}={v}" for c, v in row.items() if c.startswith("set.")]
        name = " ".join(axes) or row.get("layout") or os.path.basename(row.get("h5") or "") \
            or f"{os.path.basename(path)}:{k}"
        out.append((name, [(c, v, _number(v) if not c.startswith("set.") else None)
                           for c, v in row.items() if c is not None]))
    return out


def compare_variants(files):
    """[(name, rows)] of every variant in `files`: a step file is one, a CSV one per row."""
    kinds = {f.endswith(".csv") for f in files}
    if len(kinds) > 1:
        raise UserError("compare: give step files (.h5) or sweep tables (.csv), not both "
                        "(their rows differ)")
    variants = []
    for f in files:
        if f.endswith(".csv"):
            variants += _csv_rows(f)
        else:
            meta, tables = load(f)
            variants.append((f, summary_rows(f, meta, tables)))
    if len(variants) < 2:
        raise UserError("compare: needs at least two variants (step files, or a CSV of "
                        "two or more rows)")
    return variants


def cmd_compare(args):
    variants = compare_variants(args.files)
    by = [{label: (text, v) for label, text, v in rows} for _, rows in variants]
    keys = list(dict.fromkeys(label for _, rows in variants for label, _, _ in rows))
    first = variants[0][0]
    header = [""] + [variants[0][0]]
    for name, _ in variants[1:]:
        header += [name, f"/ {first}" if args.csv else "ratio"]
    rows = []
    for k in keys:
        ta, va = by[0].get(k, ("-", None))
        row = [k, ta]
        for r in by[1:]:
            t, v = r.get(k, ("-", None))
            row += [t, f"{v / va:.4f}" if va is not None and v is not None and va != 0 else ""]
        rows.append(row)
    if args.csv:
        import csv
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    else:
        print_table(header, rows, args.markdown)
        print(f"(ratio: each variant over the first, {first})")
    return 0


def _unavailable(ax, text):
    """An axis that says what is missing instead of staying empty."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def time_axis(span_s):
    """(scale, unit) for an axis of simulated time that spans span_s seconds."""
    if span_s >= 1:
        return 1.0, "s"
    if span_s >= 1e-3:
        return 1e3, "ms"
    return 1e6, "us"


def _time_ticks(ax, span_s, axis="x"):
    """Keeps the data in seconds and labels the axis in the unit that suits the span."""
    from matplotlib.ticker import FuncFormatter
    scale, unit = time_axis(span_s)
    getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v * scale:g}"))
    getattr(ax, f"set_{axis}label")(f"simulated time ({unit})")


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
        y0, h = COMPUTE_LANE if k in (0, 1, 2) else COMM_LANE
        for st in np.unique(sel["stage"]):
            s2 = sel[sel["stage"] == st]
            ax.broken_barh(list(zip(s2["start_s"], s2["end_s"] - s2["start_s"])),
                           (float(st) + y0, h), facecolors=OP_COLORS[k], edgecolors="none",
                           linewidth=0, label=f"{OP_KINDS[k]}:{int(st)}")
    span = max(float(meta["step_s"]), float(ops["end_s"].max()) if len(ops) else 0) or 1
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
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
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
        sel = colls[colls["group"] == gi]
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


def _finish_log_x(ax, drawn, xlabel, ylabel, missing):
    """Labels a log-x plot with a legend, or says what is `missing` when nothing was drawn."""
    if drawn:
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend()
    else:
        _unavailable(ax, missing)


def heatmap_figure(meta, tables, name, opts=None):
    """Link utilization by tier and sending port, on a colour scale from 0 to the busiest
    link, with the ports' names."""
    import matplotlib.pyplot as plt
    import numpy as np
    links = tables["links"]
    fig, ax = plt.subplots(figsize=(11, 3.5))
    ax.set_title("link utilization: busy time of each sending port over the step")
    step = float(meta["step_s"])
    if not len(links) or step <= 0:
        _unavailable(ax, f"no link counters: /links is recorded at packet fidelity only "
                         f"(this run: {meta['fidelity']} fidelity)")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    tiers = sorted(set(int(t) for t in links["tier"]))
    width = max(int((links["tier"] == t).sum()) for t in tiers)
    grid = np.full((len(tiers), width), np.nan)
    labels = [[""] * width for _ in tiers]
    for row, t in enumerate(tiers):
        sel = links[links["tier"] == t]
        sel = sel[np.argsort(sel["port"])]
        grid[row, :len(sel)] = 100 * sel["busy_s"] / step
        for i, (n, p) in enumerate(zip(sel["node"], sel["port"])):
            labels[row][i] = f"n{int(n)}/p{int(p)}"
    vmax = float(np.nanmax(grid)) or 1.0
    im = ax.imshow(grid, aspect="auto", vmin=0, vmax=vmax, cmap="viridis",
                   interpolation="nearest")
    ax.set_yticks(range(len(tiers)), [TIERS[t] if t < len(TIERS) else str(t) for t in tiers])
    # Port names along x (node/port of the first tier's row), at most 24 of them.
    step_ticks = max(1, width // 24)
    ticks = list(range(0, width, step_ticks))
    ax.set_xticks(ticks, [labels[0][i] or str(i) for i in ticks], rotation=60, fontsize="x-small")
    for row in range(len(tiers)):
        ax.text(width - 0.5, row, f" max {np.nanmax(grid[row]):.1f} %", va="center",
                fontsize="x-small", color="white", ha="right")
    fig.colorbar(im, ax=ax, label="busy (% of the step)")
    ax.set_ylabel("tier of the sending node")
    ax.set_xlabel(f"sending port (node/port, sorted by port; row: {', '.join(TIERS[t] if t < len(TIERS) else str(t) for t in tiers)})")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def busbw_figure(meta, tables, name, opts=None):
    import matplotlib.pyplot as plt
    colls = tables["collectives"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.set_title("bus bandwidth of the step's collectives by size")
    drawn = 0
    for gi, g in enumerate(GROUPS):
        sel = colls[colls["group"] == gi]
        if len(sel):
            ax.scatter(sel["bytes"], sel["busbw_gbs"], s=8, label=g)
            drawn += 1
    _finish_log_x(ax, drawn, "size S (bytes)", "busbw (GB/s)", "no collectives in this step")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


# ---- Schema version 2: flows with times, and the /samples time series ----------------------

# The heatmaps show at most this many time columns (bins are merged into columns beyond it).
MAX_COLUMNS = 1000
# The heatmaps' colour scale ends at this percentile of the non-zero cells (the colour bar
# says so, and extends when larger values exist).
SCALE_PERCENTILE = 99


def plot_options(file, collective=None, tiers=None, top=8, max_ports=128):
    """What the plots of schema version 2 take besides the tables (the `plot` options)."""
    return argparse.Namespace(file=file, collective=collective, tiers=tiers, top=top,
                              max_ports=max_ports)


def need_v2(path, meta, kind):
    if meta["schema_version"] < 2:
        raise UserError(f"{path}: {kind} needs schema version 2 (flow times, node and port "
                        f"names, /samples); this file has schema version "
                        f"{meta['schema_version']}")


def need_samples(path, meta, tables, kind):
    need_v2(path, meta, kind)
    if tables.get("samples") is None:
        raise UserError(f"{path}: no /samples group: {kind} needs the time series "
                        f"(docs/hdf5-schema.md)")


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
             f"{_fmt_bytes(float(c['bytes']))}; {len(drawn)} flows")
    if reps > 1:
        title += f", the first of {reps} repetitions"
    if len(sel) > len(drawn):
        title += f"; {len(sel) - len(drawn)} without times not drawn"
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


# The plots of every file; those of schema version 2 (flow times); those that need /samples.
PLOTS = [("timeline", timeline_figure), ("cct_cdf", cdf_figure),
         ("link_heatmap", heatmap_figure), ("busbw", busbw_figure)]
PLOTS_V2 = [("flow_gantt", gantt_figure), ("fct_cdf", fct_figure)]
PLOTS_SAMPLES = [("link_util", util_figure), ("queue_depth", queue_figure),
                 ("pfc_pause", pause_figure)]
PLOT_KINDS = dict(PLOTS + PLOTS_V2 + PLOTS_SAMPLES)


def output_dir(path):
    """-o: an existing directory we can write into, or one we can create."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"-o {path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UserError(f"-o {path}: cannot create the directory ({e.strerror})")
    probe = os.path.join(path, f".stepsim-post-{os.getpid()}")
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UserError(f"-o {path}: cannot write into the directory ({e.strerror})")
    return path


def parse_tiers(text):
    """--tier leaf or --tier leaf,spine: tier numbers."""
    if text is None:
        return None
    out = []
    for t in text.split(","):
        t = t.strip()
        if t not in TIERS:
            raise UserError(f"--tier {t}: unknown tier (allowed: {', '.join(TIERS)})")
        out.append(TIERS.index(t))
    return sorted(set(out))


def plot_support(path, meta, tables, kind):
    """Raises UserError when the file lacks what `kind` needs."""
    if kind in dict(PLOTS_V2):
        need_v2(path, meta, kind)
    elif kind in dict(PLOTS_SAMPLES):
        need_samples(path, meta, tables, kind)


def plan_figure(path):
    """`stepsim plan`'s CSV: every layout's step time (analytical) against its memory peak, the
    confirmed ones marked at their confirmed step time, the GPU's capacity as a vertical line."""
    import csv
    import matplotlib.pyplot as plt
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


def cmd_plot(args):
    import matplotlib
    matplotlib.use("Agg")
    if args.file.endswith(".csv"):  # stepsim plan's table
        if args.kinds:
            raise UserError("a plan CSV has one plot (step time against memory peak); "
                            "give no KIND")
        stem = os.path.splitext(os.path.basename(args.file))[0]
        print(save(plan_figure(args.file), output_dir(args.output), stem, "plan"))
        return 0
    unknown = [k for k in args.kinds if k not in PLOT_KINDS]
    if unknown:
        raise UserError(f"plot kind '{unknown[0]}' unknown (kinds: {', '.join(PLOT_KINDS)})")
    opts = plot_options(args.file, args.collective, parse_tiers(args.tier), args.top,
                        args.max_ports)
    meta, tables = load(args.file)
    kinds, skipped = list(dict.fromkeys(args.kinds)), []
    if kinds:
        for kind in kinds:
            plot_support(args.file, meta, tables, kind)
    else:
        for kind in PLOT_KINDS:
            try:
                plot_support(args.file, meta, tables, kind)
                kinds.append(kind)
            except UserError:
                skipped.append(kind)
    directory = output_dir(args.output)
    stem = os.path.splitext(os.path.basename(args.file))[0]
    name = run_name(args.file, meta)
    for kind in kinds:
        fig, _ = PLOT_KINDS[kind](meta, tables, name, opts)
        print(save(fig, directory, stem, kind))
    if skipped:
        why = (f"schema version {meta['schema_version']} has no flow times or time series"
               if meta["schema_version"] < 2 else "no /samples group (time series)")
        print(f"stepsim-post: note: {args.file}: {why}; skipped {', '.join(skipped)}",
              file=sys.stderr)
    return 0


def save(fig, directory, stem, name):
    import matplotlib.pyplot as plt
    path = os.path.join(directory, f"{stem}_{name}.png")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})")
    finally:
        plt.close(fig)
    return path


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return v


def main(argv):
    p = argparse.ArgumentParser(prog="stepsim-post", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="summary of one step")
    r.add_argument("file")
    r.add_argument("--markdown", action="store_true")
    r.set_defaults(run=cmd_report)
    pl = sub.add_parser("plot", help="PNG plots of one step")
    pl.add_argument("file")
    pl.add_argument("kinds", nargs="*", metavar="KIND",
                    help=f"plots to draw (default: every plot the file has data for): "
                         f"{', '.join(PLOT_KINDS)}")
    pl.add_argument("-o", "--output", default=".", help="directory for the PNG files")
    pl.add_argument("--collective", type=int, metavar="ID",
                    help="flow_gantt: the /collectives id (default: the longest network "
                         "collective with flow times)")
    pl.add_argument("--tier", metavar="TIER[,TIER]",
                    help=f"link_util, queue_depth, pfc_pause: only ports of these tiers "
                         f"({', '.join(TIERS)})")
    pl.add_argument("--top", type=positive_int, default=8, metavar="K",
                    help="queue_depth: the K ports with the largest queue (default 8)")
    pl.add_argument("--max-ports", type=positive_int, default=128, metavar="N",
                    help="link_util, pfc_pause: at most N rows, the busiest (default 128)")
    pl.set_defaults(run=cmd_plot)
    c = sub.add_parser("compare", help="steps side by side, with ratios to the first")
    c.add_argument("files", nargs="+", metavar="FILE",
                   help="step files (.h5), or sweep tables (.csv: one variant per row)")
    c.add_argument("--markdown", action="store_true")
    c.add_argument("--csv", action="store_true", help="the table as CSV on stdout")
    c.set_defaults(run=cmd_compare)
    try:
        # plot's KINDs may follow its options (plot FILE -o DIR link_util): argparse leaves
        # them over, and they join the kinds.
        args, extra = p.parse_known_args(argv)
        if args.command != "plot" and extra:
            p.error(f"unrecognized arguments: {' '.join(extra)}")
        if any(x.startswith("-") for x in extra):
            pl.error(f"unrecognized arguments: {' '.join(x for x in extra if x.startswith('-'))}")
        if extra:
            args.kinds = list(args.kinds) + extra
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        code = args.run(args)
        sys.stdout.flush()
        return code
    except UserError as e:
        print(f"stepsim-post: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (| head): no traceback; what is left unwritten goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
