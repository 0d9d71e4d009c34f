"""Claim T1: every sample mean lies within sigmas / sqrt(n) of 0."""

from __future__ import annotations

import numpy as np

from depthlab.claims import Verdict


def check(spec, tables):
    t = tables["means"]
    z = np.abs(t["mean"]) * np.sqrt(t.n)
    verdict = Verdict(
        "T1",
        "the sample mean is within sigmas / sqrt(n) of 0",
        "means",
        "every n",
        bool((z <= spec.sigmas).all()),
        ", ".join(f"n={n}: |mean| sqrt(n) = {v:.2f}" for n, v in zip(t.n, z)) + f" (need <= {spec.sigmas:g})",
    )
    return [verdict], ["The layout's worked example: a study is one folder."]
