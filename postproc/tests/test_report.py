"""report and compare: a known file's numbers, and the names the run summary uses."""

import csv
import io
import re

from conftest import GPUS, STEP_S, TOKENS


def rows(out):
    """report's text table as {label: text}."""
    table = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"^(\S.*?)\s{2,}(.*)$", line)
        if m:
            table[m.group(1)] = m.group(2)
    return table


def test_report_prints_the_files_figures(step, post):
    rc, out, err = post("report", step())
    assert rc == 0 and not err
    r = rows(out)
    assert r["step time"] == "2.000 ms"
    assert r["MFU"] == "40.00 %"
    assert r["tokens/s (cluster)"] == f"{TOKENS / STEP_S:,.0f}" == "2,048,000"
    assert r["tokens/s per GPU"] == f"{TOKENS / STEP_S / GPUS:,.4g}" == "1.28e+05"
    assert r["complete"] == "yes"
    assert r["message FCT p50/p99/max"] == "4.00 / 5.50 / 6.00 us"
    # Collective 1: 16 MiB in 40 us.
    assert r["busbw dp"].startswith(f"{(1 << 24) / 40e-6 / 1e9:.2f} GB/s (1 collectives)")
    # 8 flows, retransmitted s % 3 for s = 0..7.
    assert r["retransmitted packets"] == str(sum(s % 3 for s in range(8)))


def test_report_matches_stepsims_summary(tiny, post):
    """The numbers stepsim printed for its own step, read back from its file."""
    path, summary = tiny
    rc, out, _ = post("report", path)
    assert rc == 0
    r = rows(out)
    printed = dict(re.findall(r"^(step time|MFU|tokens per second) +(\S+ ?\S*)", summary,
                              re.M))
    assert r["step time"] == printed["step time"]
    assert r["MFU"] == printed["MFU"]
    assert r["tokens/s per GPU"] == printed["tokens per second"].split()[0]
    fct = re.search(r"^message FCT +p50 ([0-9.]+) us, p99 ([0-9.]+) us, max ([0-9.]+) us",
                    summary, re.M)
    assert r["message FCT p50/p99/max"] == f"{fct[1]} / {fct[2]} / {fct[3]} us"


def test_compare_divides_each_row_by_the_first(step, post):
    a = step("a.h5")
    b = step("b.h5", meta=dict(step_s=2 * STEP_S, mfu=0.2))
    rc, out, _ = post("compare", a, b, "--csv")
    assert rc == 0
    table = {r[0]: r for r in csv.reader(io.StringIO(out))}
    assert float(table["step time"][3]) == 2.0
    assert float(table["MFU"][3]) == 0.5
    assert float(table["tokens/s (cluster)"][3]) == 0.5
