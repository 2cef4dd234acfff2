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
    stepsim-post export FILE.h5 --csv DIR        the tables as CSV files (pandas, spreadsheets)

Runs with the Python stepsim was configured with, or STEPSIM_PYTHON (h5py, numpy,
matplotlib). Exit codes: 0 done, 2 a bad argument or file (one message on stderr).

The package: schema (the reader and its checks), fabric (port names, /samples), report,
compare, plots (one module per family of plots), export, cli.
"""

# The names scripts and tests use (`import stepsim_post as sp; sp.load(...)`).
from .schema import (GROUPS, KINDS, OP_KINDS, SCHEMA_VERSIONS, TIERS, UserError,  # noqa: F401
                     load)
from .fabric import Fabric, fabric_of  # noqa: F401,E402
from .report import fmt_time, run_name, summary_rows  # noqa: F401,E402
from .compare import compare_variants  # noqa: F401,E402
from .plots import PLOT_KINDS, PLOTS, PLOTS_SAMPLES, PLOTS_V2, plot_support  # noqa: F401,E402
from .plots.common import (COMM_LANE, COMPUTE_LANE, GROUP_COLORS, OP_COLORS,  # noqa: F401,E402
                           plot_options)
from .plots.flows import default_collective, fct_figure, gantt_figure  # noqa: F401,E402
from .plots.plan import plan_figure  # noqa: F401,E402
from .plots.samples import pause_figure, queue_figure, util_figure  # noqa: F401,E402
from .plots.step import busbw_figure, cdf_figure, heatmap_figure, timeline_figure  # noqa: F401,E402
