"""Mori & Ueda (2022), *Interplay between depth of neural networks and locality of target functions*.

Nets at a fixed parameter count per depth (Eq. 3), trained with plain SGD at the
learning rate chosen by K-fold cross-validated Bayesian optimisation, against
their analytic NTK and NNGP kernel (Appendix A); Figures 1-6.
"""

from depthlab.studies import Stage, Study

_P = "depthlab.studies.mori_ueda"
STUDY = Study(
    name="mori_ueda",
    title="Mori & Ueda (2022): depth vs locality",
    specs_module=f"{_P}.specs",
    stages={
        "data": Stage(f"{_P}.data:make_data"),
        "lrsearch": Stage(f"{_P}.search:run_lrsearch"),
        "train": Stage(f"{_P}.training:run_train"),
        "ntk": Stage(f"{_P}.kernel:run_kernels"),
        "entk": Stage(f"{_P}.lazy:run_entk"),
        "figure": Stage(f"{_P}.figures:make_figure", kind="figure"),
        "claims": Stage(f"{_P}.claims:check", kind="claims"),
    },
)
