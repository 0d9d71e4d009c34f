"""Figure ``means``: the sample mean against n, with the 1/sqrt(n) standard error."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab import plotstyle as ps


def make_table(spec, inputs) -> pd.DataFrame:
    """The CSV's table from the input stores; the audit re-derives it with this and compares it with the CSV."""
    rows = [
        {"n": i.job.n, "mean": float(i.data["mean"]), "standard_error": 1 / np.sqrt(i.job.n)}
        for i in sorted(inputs, key=lambda i: i.job.n)
    ]
    return pd.DataFrame(rows)


def make_figure(spec, inputs):
    table = make_table(spec, inputs)
    fig, (ax,) = ps.panels(1)
    ax.errorbar(table.n, table["mean"], yerr=table.standard_error, fmt="-o")
    ax.axhline(0.0, color="grey", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("sample mean (bars: 1/sqrt(n))")
    return ps.finish(fig, "Tiny: sample means of standard normal draws"), table
