"""Depth separation (Telgarsky; Eldan & Shamir; Safran & Shamir; Safran, Eldan & Shamir).

What depth can express against what training finds: Telgarsky's sawtooth Delta^L (an exact
deep construction, exact piece counts of trained nets, the piece-count lower bound for
shallow nets) and radial targets in dimension d at equal parameter counts per depth.
"""

from depthlab.study import Stage, Study

from . import specs as S

STUDY = Study(
    name="separation",
    title="Depth separation: the sawtooth, radial targets, the ES16 function and a 3-layer learner",
    stages=(
        Stage("sawtooth_data", S.SawtoothDataSpec, ".sawtooth_data:make_data", path="sawtooth/data.zarr"),
        Stage("construction", S.ConstructionSpec, ".construction:make_construction", path="sawtooth/construction.zarr"),
        # no GPU: its nets (one input, width 2-4) trained 2.1-2.3x slower on an H100 than on one core of the same
        # machine, each job alone (README, 'GPU'); so its jobs run on the CPU and ask a cluster for no GPU
        Stage(
            "sawtooth",
            S.SawtoothSpec,
            ".sawtooth:run_sawtooth",
            path="sawtooth/L{level}/{arch}.zarr",
            precision="float32",  # torch float32 nets (reproduce listed it as float64 by hand before: 1e-9)
            calls=True,
        ),
        Stage("radial_data", S.RadialDataSpec, ".radial_data:make_data", path="radial/{target}/{dist}/d{d}/data.zarr"),
        Stage(
            "radial",
            S.RadialSpec,
            ".radial:run_radial",
            path="radial/{target}/{dist}/d{d}/P{budget}/depth{depth}.zarr",
            gpu=True,
            precision="float32",
            step="mlp",
            calls=True,
        ),
        Stage(
            "learner",
            S.LearnerSpec,
            ".learner:run_learner",
            path="learner/{dist}/d{d}/m{width}.zarr",
            gpu=True,
            precision="float32",
            step="learner",
            calls=True,
        ),
        Stage("figure", S.FigureSpec, ".figures:make_figure", kind="figure"),
        Stage("claims", S.ClaimsSpec, ".claims:check", kind="claims"),
    ),
    figures=S.figures,
    check=S.check,
    claims_inputs=S.claims_inputs,
)
