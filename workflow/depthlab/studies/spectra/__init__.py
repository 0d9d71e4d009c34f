"""Bietti & Bach (2021), *Deep equals shallow for ReLU networks in kernel regimes*.

The Mercer eigenvalues of deep ReLU random-features (NNGP) and neural tangent kernels on
the sphere, per depth, by two independent quadratures; their fitted decay against
mu_k ~ k^(-d-2nu+1); Mori & Ueda's NTK seen the same way; and kernel ridge regression
learning curves per depth.
"""

from depthlab.studies import Stage, Study

_P = "depthlab.studies.spectra"
STUDY = Study(
    name="spectra",
    title="Bietti & Bach (2021): deep equals shallow in kernel regimes",
    specs_module=f"{_P}.specs",
    stages={
        "eigen": Stage(f"{_P}.eigen:run_eigen"),
        "krr_data": Stage(f"{_P}.learning:make_krr_data"),
        "krr": Stage(f"{_P}.learning:run_krr"),
        "figure": Stage(f"{_P}.figures:make_figure", kind="figure"),
        "claims": Stage(f"{_P}.claims:check", kind="claims"),
    },
)
