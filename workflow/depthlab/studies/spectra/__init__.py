"""Bietti & Bach (2021), *Deep equals shallow for ReLU networks in kernel regimes*.

The Mercer eigenvalues of deep ReLU random-features (NNGP) and neural tangent kernels on
the sphere, per depth, by two independent quadratures; their fitted decay against
mu_k ~ k^(-d-2nu+1); Mori & Ueda's NTK seen the same way; and kernel ridge regression
learning curves per depth.
"""

from depthlab.study import Stage, Study

from . import specs as S

STUDY = Study(
    name="spectra",
    title="Bietti & Bach (2021): deep equals shallow in kernel regimes",
    stages=(
        Stage("eigen", S.EigenSpec, ".eigen:run_eigen", path="eigen/{kernel}/d{d}.zarr"),
        Stage("krr_data", S.KrrDataSpec, ".krr_data:make_krr_data", path="krr/data.zarr"),
        Stage("krr", S.KrrSpec, ".krr:run_krr", path="krr/{kernel}/L{depth}.zarr"),
        Stage("theory", S.TheorySpec, ".theory:run_theory", path="theory/{kernel}/L{depth}.zarr"),
        Stage("figure", S.FigureSpec, ".figures:make_figure", kind="figure"),
        Stage("claims", S.ClaimsSpec, ".claims:check", kind="claims"),
    ),
    figures=S.figures,
    check=S.check,
    claims_inputs=S.claims_inputs,
)
