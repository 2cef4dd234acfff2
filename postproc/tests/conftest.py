"""Fixtures of stepsim-post's tests: synthetic step files written with h5py (columns as
docs/hdf5-schema.md lists them), the command line run as users run it (the wrapper, in a
child process), and the built stepsim when the test command passes it (STEPSIM)."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
POSTPROC = os.path.dirname(HERE)
WRAPPER = os.path.join(POSTPROC, "stepsim-post")
sys.path.insert(0, POSTPROC)

import matplotlib  # noqa: E402

matplotlib.use("Agg")

# The synthetic step: 16 GPUs, 2 ms, 4,096 tokens, MFU 0.40; 4 servers with 2 NIC ports,
# 2 leaves, 2 spines, every link 400 Gb/s.
STEP_S = 2e-3
TOKENS = 4096.0
GPUS = 16
RATE_GBPS = 400.0
INTERVAL_PS = 1_000_000
NODES = [("srv0", 0), ("srv1", 0), ("srv2", 0), ("srv3", 0), ("leaf0", 1), ("leaf1", 1),
         ("spine0", 2), ("spine1", 2)]
META_DTYPES = dict(schema_version=np.int32, gpus=np.int64, complete=np.int32,
                   critical_stage=np.uint32, messages=np.uint64)


def ports():
    """[(port, node, index, peer, rate)]: server i's ports 0, 1 to its leaf, leaves to spines."""
    links = [(s, i, 4 + s // 2, (s % 2) * 2 + i) for s in range(4) for i in range(2)]
    links += [(4 + leaf, 4 + sp, 6 + sp, leaf) for leaf in range(2) for sp in range(2)]
    ids = {}
    for a, ia, b, ib in links:
        ids.setdefault((a, ia), len(ids))
        ids.setdefault((b, ib), len(ids))
    peer = {}
    for a, ia, b, ib in links:
        peer[ids[(a, ia)]], peer[ids[(b, ib)]] = ids[(b, ib)], ids[(a, ia)]
    return [(p, n, i, peer[p], RATE_GBPS) for (n, i), p in ids.items()]


PORTS = ports()

OPS_DTYPE = [("gpu", "u4"), ("stage", "u4"), ("kind", "u2"), ("group", "u2"), ("micro", "u4"),
             ("chunk", "u4"), ("layer", "u4"), ("start_s", "f8"), ("end_s", "f8")]
COLL_DTYPE = [("id", "u4"), ("stage", "u4"), ("group", "u2"), ("kind", "u2"), ("gpus", "u4"),
              ("bytes", "i8"), ("start_s", "f8"), ("end_s", "f8"), ("busbw_gbs", "f8")]
FLOW_DTYPE = [("collective", "u4"), ("repeats", "u4"), ("src_nic", "u4"), ("dst_nic", "u4"),
              ("src_gpu", "u4"), ("dst_gpu", "u4"), ("group", "u2"), ("kind", "u2"),
              ("bytes", "u8"), ("messages", "u8"), ("packets", "u8"), ("retransmitted", "u8"),
              ("ecn_marked", "u8"), ("start_ps", "i8"), ("first_byte_ps", "i8"),
              ("end_ps", "i8")]
LINK_DTYPE = [("port", "u4"), ("node", "u4"), ("link", "u4"), ("tier", "u4"), ("bytes", "f8"),
              ("packets", "f8"), ("ecn_marks", "f8"), ("pause_sent", "f8"), ("drops", "f8"),
              ("busy_s", "f8"), ("paused_s", "f8")]
SAMPLE_DTYPE = [("bin", "u4"), ("port", "u4"), ("bytes", "u8"), ("queue_max_bytes", "u8"),
                ("paused_ps", "i8"), ("ecn_marks", "u4"), ("pause_sent", "u4"), ("drops", "u4")]
MEMORY_DTYPE = [("job", "u4"), ("stage", "u4"), ("term", "S32"), ("bytes", "f8")]


def nic(gpu):
    return [p for p, n, i, _, _ in PORTS if n == gpu // 4 and i == (gpu // 2) % 2][0]


def default_ops():
    """Stage 0 and 1: forward, backward (alternating, 100 us each), a blocking comm of 10 us
    after each, and a final wait."""
    rows = []
    for st in range(2):
        t = 0.0
        for i in range(8):
            rows.append((st * 4, st, i % 2, 0, i, 0, 0, t, t + 100e-6))
            rows.append((st * 4, st, 3, 0, i, 0, 0, t + 100e-6, t + 110e-6))
            t += 110e-6
        rows.append((st * 4, st, 4, 0, 0, 0, 0, t, STEP_S))
    return rows


def default_collectives():
    return [(0, 0, 0, 0, 4, 1 << 20, 0.0, 60e-6, 0), (1, 0, 4, 0, 4, 1 << 24, 5e-6, 45e-6, 0),
            (2, 0, 3, 7, 2, 1 << 16, 2e-6, 6e-6, 0)]


def flows_for(collective, n, group=4, t0_ps=5_000_000):
    """n flows of one collective: GPU s -> s+1, each 1 us later, 30 us long."""
    return [(collective, 1, nic(s % GPUS), nic((s + 1) % GPUS), s % GPUS, (s + 1) % GPUS, group,
             0, 1 << 20, 4, 1024, s % 3, s % 5, t0_ps + s * 1_000_000,
             t0_ps + s * 1_000_000 + 200_000, t0_ps + s * 1_000_000 + 30_000_000)
            for s in range(n)]


def write_step(path, meta=None, drop_meta=(), flows=None, links=True, samples=None,
               memory=True, collectives=None, ops=None):
    """A schema-2 step file. meta: /meta attributes over the defaults (None deletes one);
    flows: /flows rows (default: collective 1's 8 flows); links: /links rows for every port
    (busy share by port: port p is busy (p % 5) / 5 of the step); samples: /samples/ports rows
    or None (no /samples group)."""
    m = dict(schema_version=2, stepsim_version="test", model="synthetic",
             topology="leafspine-4", gpu="h100", fidelity="packet", gpus=GPUS, ranks=1,
             threads=1, complete=1, step_s=STEP_S, mfu=0.4, compute_s=800e-6, bubble_s=50e-6,
             optimizer_s=20e-6, critical_stage=0, tokens_per_step=TOKENS, exposed_dp_s=1e-5,
             messages=64, fct_p50_us=4.0, fct_p99_us=5.5, fct_max_us=6.0)
    m.update(meta or {})
    with h5py.File(path, "w") as f:
        g = f.create_group("meta")
        for k, v in m.items():
            if v is None or k in drop_meta:
                continue
            g.attrs[k] = META_DTYPES[k](v) if k in META_DTYPES else v
        f["ops"] = np.array(ops if ops is not None else default_ops(), dtype=OPS_DTYPE)
        c = collectives if collectives is not None else default_collectives()
        f["collectives"] = np.array(
            [r[:8] + (r[5] / max(1e-12, r[7] - r[6]) / 1e9,) for r in c], dtype=COLL_DTYPE)
        f["flows"] = np.array(flows if flows is not None else flows_for(1, 8),
                              dtype=FLOW_DTYPE)
        rows = [(p, n, p, NODES[n][1], 1e6, 1e3, 0, 0, 0, STEP_S * (p % 5) / 5, 0)
                for p, n, _, _, _ in PORTS] if links else []
        f["links"] = np.array(rows, dtype=LINK_DTYPE)
        f["nodes"] = np.array([(i, name.encode(), t) for i, (name, t) in enumerate(NODES)],
                              dtype=[("node", "u4"), ("name", "S32"), ("tier", "u4")])
        f["ports"] = np.array(PORTS, dtype=[("port", "u4"), ("node", "u4"), ("index", "u4"),
                                            ("peer", "u4"), ("rate_gbps", "f8")])
        if samples is not None:
            s = f.create_group("samples")
            s.attrs["interval_ps"] = np.int64(INTERVAL_PS)
            s.create_dataset("ports", data=np.array(samples, dtype=SAMPLE_DTYPE), chunks=True,
                             maxshape=(None,))
        if memory:
            f["memory"] = np.array([(0, st, t.encode(), b) for st in range(2) for t, b in
                                    (("weights", 1e9 + st), ("activations", 2.5e9))],
                                   dtype=MEMORY_DTYPE)
    return path


def default_samples(bins=20):
    """Ports 0 and 8 busy at 10 % and 25 % of line rate in every bin; port 0 queues 10 KB;
    port 8 paused a quarter of every other bin."""
    per_bin = RATE_GBPS * 1e9 * INTERVAL_PS * 1e-12 / 8
    rows = []
    for b in range(bins):
        rows.append((b, 0, int(0.10 * per_bin), 10_000, 0, 0, 0, 0))
        rows.append((b, 8, int(0.25 * per_bin), 0, INTERVAL_PS // 4 if b % 2 else 0, 1,
                     1 if b % 2 else 0, 0))
    return rows


@pytest.fixture
def step(tmp_path):
    """step(name, **write_step options) -> the path of a new synthetic step file."""
    def make(name="step.h5", **kw):
        return write_step(str(tmp_path / name), **kw)
    return make


def run_post(*args, timeout=60, env=None):
    """stepsim-post ARGS through the wrapper: (exit code, stdout, stderr lines)."""
    p = subprocess.run([WRAPPER, *[str(a) for a in args]], capture_output=True, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout, [line for line in p.stderr.splitlines() if line]


@pytest.fixture
def post():
    return run_post


def one_error(result, want):
    """The result is exit 2 with one message containing `want` and no traceback."""
    rc, out, err = result
    assert rc == 2, (rc, out, err)
    assert len(err) == 1 and want in err[0], err
    assert "Traceback" not in out


@pytest.fixture(scope="session")
def stepsim():
    """The built stepsim (STEPSIM, as the test command passes it), or the test is skipped."""
    path = os.environ.get("STEPSIM")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("STEPSIM is not set to the built stepsim")
    return path


@pytest.fixture(scope="session")
def tiny(stepsim, tmp_path_factory):
    """The tiny scenario's packet step written by stepsim, with its summary: (path, stdout)."""
    d = tmp_path_factory.mktemp("tiny")
    path = str(d / "tiny.h5")
    src = os.path.dirname(POSTPROC)
    p = subprocess.run([stepsim, "run", os.path.join(src, "workloads", "tiny.yaml"), "--quiet",
                        "-o", path], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return path, p.stdout
