"""Malach & Shalev-Shwartz (2019), *Is deeper better only when shallow is good?*

Fractal distributions (2-D Cantor, Vicsek, Sierpinski, pentaflake; 1-D Cantor) with
approximation curves that move the negatives from coarse to fine levels, and nets of every
depth and width trained on them as the authors' code does; Figures 4-6 and Tables 1-2.
"""

from depthlab.studies import Stage, Study

_P = "depthlab.studies.fractals"
STUDY = Study(
    name="fractals",
    title="Malach & Shalev-Shwartz (2019): fractal distributions",
    specs_module=f"{_P}.specs",
    stages={
        "data": Stage(f"{_P}.data:make_data"),
        "train": Stage(f"{_P}.training:run_train"),
        "figure": Stage(f"{_P}.figures:make_figure", kind="figure"),
        "claims": Stage(f"{_P}.claims:check", kind="claims"),
    },
)
