"""Malach & Shalev-Shwartz (2019), *Is deeper better only when shallow is good?*

Fractal distributions (2-D Cantor, Vicsek, Sierpinski, pentaflake; 1-D Cantor) with
approximation curves that move the negatives from coarse to fine levels, and nets of every
depth and width trained on them as the authors' code does, at every learning rate of a grid (the best reported);
Figures 4-6, Tables 1-2, training curves, and Fig. 7 (CNNs of growing depth and width on real images).
"""

from depthlab.study import Stage, Study

from . import specs as S

STUDY = Study(
    name="fractals",
    title="Malach & Shalev-Shwartz (2019): fractal distributions",
    stages=(
        Stage("data", S.DataSpec, ".data:make_data", path="{fractal}/n{n}/pdeg{pdeg}/data.zarr"),
        Stage(
            "train",
            S.TrainSpec,
            ".train:run_train",
            path="{fractal}/n{n}/pdeg{pdeg}/depth{depth}/w{width}.zarr",
            gpu=True,
            precision="float32",
            step="mlp",
            calls=True,
        ),
        Stage("images", S.ImagesSpec, ".images:make_images", path="realdata/{dataset}/data.zarr"),
        Stage(
            "cnn",
            S.CnnSpec,
            ".cnn:run_cnn",
            path="realdata/{dataset}/depth{depth}/w{width}.zarr",
            gpu=True,
            precision="float32",
            calls=True,
        ),
        Stage("figure", S.FigureSpec, ".figures:make_figure", kind="figure"),
        Stage("claims", S.ClaimsSpec, ".claims:check", kind="claims"),
    ),
    figures=S.figures,
    check=S.check,
    claims_inputs=S.claims_inputs,
)
