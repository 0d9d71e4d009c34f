"""A tiny study, the worked example of "a study is one folder": the mean of n standard normal draws.

One store stage (``draws``), one figure (``means``), one claim (T1).  Nothing outside this
folder names it: the registry finds it (here through $DEPTHLAB_STUDY_PATH), the workflow
generates its rule, the validator reads its schema.yaml, and a config section turns it on.
"""

from depthlab.study import Stage, Study

from . import specs as S

STUDY = Study(
    name="tiny",
    title="Tiny: the sample mean of normal draws",
    stages=(
        Stage("draws", S.DrawsSpec, ".draws:make_draws", path="draws/n{n}.zarr"),
        Stage("figure", S.FigureSpec, ".figures:make_figure", kind="figure"),
        Stage("claims", S.ClaimsSpec, ".claims:check", kind="claims"),
    ),
    figures=S.figures,
)
