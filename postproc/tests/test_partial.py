"""A step that stopped early (/meta complete = 0) prints no MFU or tokens/s and is marked
PARTIAL in report and compare, whatever its mfu attribute holds (a number, NaN, absent)."""

import csv
import io
import math

import pytest

from conftest import one_error
from test_report import rows

PARTIAL_MFU = [0.3536, math.nan, None]


@pytest.mark.parametrize("mfu", PARTIAL_MFU, ids=["number", "nan", "absent"])
def test_report_of_a_partial_step(step, post, mfu):
    rc, out, err = post("report", step(meta=dict(complete=0, mfu=mfu)))
    assert rc == 0 and not err
    assert out.splitlines()[0].strip().endswith("(PARTIAL)")
    r = rows(out)
    assert r["MFU"] == "n/a (the step did not complete)"
    assert r["tokens/s per GPU"] == r["tokens/s (cluster)"] == "n/a (the step did not complete)"
    assert "PARTIAL" in r["complete"] and "PARTIAL" in r["step time"]
    assert "%" not in r["MFU"] and "35.36" not in out


def test_compare_marks_the_partial_step_and_gives_it_no_headline_ratio(step, post):
    done = step("done.h5", meta=dict(mfu=0.3375))
    cut = step("cut.h5", meta=dict(complete=0, mfu=0.3536, step_s=1e-3))
    rc, out, _ = post("compare", done, cut, "--csv")
    assert rc == 0
    lines = list(csv.reader(io.StringIO(out)))
    assert lines[0][2] == f"{cut} (PARTIAL)"
    table = {r[0]: r for r in lines}
    for label in ("MFU", "step time", "tokens/s (cluster)", "tokens/s per GPU"):
        assert table[label][3] == "", (label, table[label])  # no ratio
    assert table["MFU"][2] == "n/a (the step did not complete)"
    assert float(table["compute"][3]) == 1.0  # the rest keeps its ratio
    rc, out, _ = post("compare", done, cut)
    assert "PARTIAL: a step that stopped early" in out


@pytest.mark.parametrize("meta,want", [
    (dict(mfu=1.358), "damaged: /meta mfu = 1.358 in a complete step"),
    (dict(mfu=float("nan")), "damaged: /meta mfu = nan in a complete step"),
    (dict(complete=7), "damaged: /meta complete = 7"),
    (dict(step_s=-1.0), "damaged: /meta step_s = -1.0"),
])
def test_impossible_figures_are_damage(step, post, meta, want):
    one_error(post("report", step(meta=meta)), want)


def test_report_names_why_a_partial_step_stopped(step, post):
    rc, out, err = post("report", step(meta=dict(complete=0, mfu=math.nan,
                                                 status="interrupted")))
    assert rc == 0 and not err
    assert "stopped early, interrupted" in rows(out)["complete"]


def test_a_status_that_contradicts_complete_is_damage(step, post):
    one_error(post("report", step(meta=dict(complete=1, status="interrupted"))),
              "damaged: /meta status = 'interrupted' but complete = ")
