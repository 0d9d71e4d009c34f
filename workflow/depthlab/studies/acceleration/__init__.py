"""Depth as an optimiser: implicit acceleration by overparameterization (Arora, Cohen & Hazan 2018).

l_p linear regression (p = 2, 4) as a depth-N linear network w_e = W_N ... W_1, which can express nothing new but moves
differently under gradient descent; the paper's end-to-end update rule run beside each net, without a network; and
the depth-1 model under momentum, AdaGrad, AdaDelta and Adam, every method and depth at its own best learning rate.
"""

from depthlab.study import Stage, Study

from . import specs as S

STUDY = Study(
    name="acceleration",
    title="Arora, Cohen & Hazan (2018): depth as an optimiser",
    stages=(
        Stage("data", S.DataSpec, ".data:make_data", path="{dataset}/data.zarr"),
        Stage(
            "train",
            S.TrainSpec,
            ".train:run_train",
            path="{dataset}/p{p}/{init}/depth{depth}.zarr",
            gpu=True,
            calls=True,
        ),
        Stage(
            "baseline",
            S.BaselineSpec,
            ".baseline:run_baseline",
            path="{dataset}/p{p}/baselines/{method}.zarr",
            gpu=True,
            calls=True,
        ),
        Stage("figure", S.FigureSpec, ".figures:make_figure", kind="figure"),
        Stage("claims", S.ClaimsSpec, ".claims:check", kind="claims"),
    ),
    figures=S.figures,
    check=S.check,
)
