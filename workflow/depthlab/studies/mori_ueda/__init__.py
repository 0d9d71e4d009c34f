"""Mori & Ueda (2022), *Interplay between depth of neural networks and locality of target functions*.

Nets at a fixed parameter count per depth (Eq. 3), trained with plain SGD at the
learning rate chosen by K-fold cross-validated Bayesian optimisation, against
their analytic NTK and NNGP kernel (Appendix A); Figures 1-6.
"""

from depthlab.study import Stage, Study

from . import specs as S

STUDY = Study(
    name="mori_ueda",
    title="Mori & Ueda (2022): depth vs locality",
    stages=(
        Stage("data", S.DataSpec, ".data:make_data", path="{figure}/data/{target}.zarr"),
        Stage(
            "lrsearch",
            S.LrSearchSpec,
            ".lrsearch:run_lrsearch",
            path="{figure}/lrsearch/{target}/L{depth}.zarr",
            gpu=True,
            precision="float32",
            step="mlp",
            calls=True,
        ),
        Stage(
            "train",
            S.TrainSpec,
            ".train:run_train",
            path="{figure}/train/{target}/L{depth}.zarr",
            gpu=True,
            precision="float32",
            step="mlp",
            calls=True,
        ),
        # both evaluate the trained float32 nets beside their kernels: their numbers carry float32 rounding
        Stage(
            "ntk",
            S.NtkSpec,
            ".ntk:run_kernels",
            path="{figure}/ntk/{target}/L{depth}.zarr",
            gpu=True,
            precision="float32",
        ),
        Stage("entk", S.EntkSpec, ".entk:run_entk", path="{figure}/entk/{target}/L{depth}.zarr", precision="float32"),
        Stage("figure", S.FigureSpec, ".figures:make_figure", kind="figure"),
        Stage("claims", S.ClaimsSpec, ".claims:check", kind="claims"),
    ),
    figures=S.figures,
    check=S.check,
)
