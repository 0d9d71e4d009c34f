"""Depth separation (Telgarsky; Eldan & Shamir; Safran & Shamir; Safran, Eldan & Shamir).

What depth can express against what training finds: Telgarsky's sawtooth Delta^L (an exact
deep construction, exact piece counts of trained nets, the piece-count lower bound for
shallow nets) and radial targets in dimension d at equal parameter counts per depth.
"""

from depthlab.studies import Stage, Study

_P = "depthlab.studies.separation"
STUDY = Study(
    name="separation",
    title="Depth separation: the sawtooth and radial targets",
    specs_module=f"{_P}.specs",
    stages={
        "sawtooth_data": Stage(f"{_P}.sawtooth_data:make_data"),
        "construction": Stage(f"{_P}.sawtooth_data:make_construction"),
        "sawtooth": Stage(f"{_P}.sawtooth_train:run_sawtooth"),
        "radial_data": Stage(f"{_P}.radial_data:make_data"),
        "radial": Stage(f"{_P}.radial_train:run_radial"),
        "figure": Stage(f"{_P}.figures:make_figure", kind="figure"),
        "claims": Stage(f"{_P}.claims:check", kind="claims"),
    },
)
