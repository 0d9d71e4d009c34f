"""The settings of the cross-validated learning-rate search (:mod:`depthlab.core.lrsearch`), as plain frozen data: a
study's spec holds them as they are (its JSON is the job's identity), and the cost model reads them, without the
search's own imports (torch): Snakemake's process builds every spec."""

from __future__ import annotations

import math
from dataclasses import dataclass


def rung_epochs(max_epochs: int, check_every: int, eta: int, rungs: int) -> tuple[int, ...]:
    """The rungs of successive halving: max_epochs / eta^r for r = rungs ... 1, each rounded up to a check epoch (the
    trainer prunes at checks), those below the budget, increasing and distinct."""
    if eta <= 1 or rungs < 1:
        return ()
    E, c = max_epochs, check_every
    out = sorted({min(E, c * math.ceil(E / eta**r / c)) for r in range(rungs, 0, -1)})
    return tuple(int(e) for e in out if e < E)


@dataclass(frozen=True)
class SearchSettings:
    folds: int = 10  # K of K-fold cross-validation (paper: 10)
    log10_lr_bounds: tuple[float, float] = (-3.0, 0.0)  # search box for log10(lr)
    init_points: int = 4  # first round: evenly spaced candidates across the box
    rounds: int = 3  # Bayesian-optimisation rounds after the first
    candidates_per_round: int = 4  # candidates proposed (and trained as one batch) per round
    kappa: float = 2.576  # UCB exploration weight (the package's default)
    seed: int = 0  # master of the search's streams: fold split, proposals, the models' init and order
    use_folds: int | None = None  # train only the first use_folds folds (None: all K)
    grow_rounds: int = 0  # rounds that extend the search a decade beyond a choice at an edge of what was evaluated
    log10_lr_limits: tuple[float, float] | None = None  # how far growth may go (None: the box itself)
    halving_eta: int = 0  # successive halving within each round: keep the best 1/eta at each rung (0 or 1: off)
    halving_rungs: int = 2  # rungs below the budget: at max_epochs / eta^R, ..., max_epochs / eta
    max_candidates: int = 0  # candidates (x folds) per stack: a round with more trains in parts, each halved on its own
    first_rung_folds: int = 0  # halving's first rung on only the first this-many folds (0: every fold; see _screened)
    first_rung_se: float = 0.0  # ... where a candidate within this many paired SEs of the screen's best goes on too

    def trained_epochs(self, max_epochs: int, check_every: int, per_round: int) -> float:
        """Candidate-epochs one round of ``per_round`` candidates trains (each x its folds): the full search
        ``per_round x max_epochs`` at most; with halving, each rung's ceil(n / eta) survivors up to the next rung.  A
        one-fold screen's SE rule (``first_rung_se``) can keep more than ceil(n / eta): the cost model does not price
        those."""
        if self.halving_eta <= 1 or per_round <= 1:
            return float(per_round * max_epochs)
        rungs = list(rung_epochs(max_epochs, check_every, self.halving_eta, self.halving_rungs)) + [max_epochs]
        n, done, total = per_round, 0, 0.0
        if 0 < self.first_rung_folds < self.folds and len(rungs) > 1:
            # the first rung on first_rung_folds of the folds; the kept candidates' other folds to it; then all on
            f, K, n = self.first_rung_folds, self.folds, int(-(-per_round // self.halving_eta))
            total = (per_round * f + n * (K - f)) * rungs[0] / K
            done, rungs = rungs[0], rungs[1:]
        for e in rungs:
            total += n * (e - done)
            done = e
            n = int(-(-n // self.halving_eta))
        return total
