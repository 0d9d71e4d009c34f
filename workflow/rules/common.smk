# The only Python of the workflow: config validation, grid expansion, named input/param functions.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # use the checkout's package

import depthlab.config as dlc

config = dlc.validate(config)
R = config["results"]
DEVICE = config["device"]
FIGURES = config["figures"]


wildcard_constraints:
    figure="fig[0-9]+",
    target="[A-Za-z0-9][A-Za-z0-9_.-]*",
    depth="[0-9]+",


def _json(spec):
    return dlc.canonical_json(spec)


# ---- grid -------------------------------------------------------------------------


def figure_files_of(figure):
    stem = f"{R}/figures/{figure}"
    return [f"{stem}.png", f"{stem}.pdf", f"{stem}.csv", f"{stem}.provenance.json"]


def all_figures(wildcards):
    return [f for name in sorted(FIGURES) for f in figure_files_of(name)] + [f"{R}/claims.md", f"{R}/config.used.yaml"]


def _figure_target(name):
    def files(wildcards):
        if name not in FIGURES:
            raise ValueError(f"{name} is not configured: config key figures.{name} is missing (configured: {', '.join(sorted(FIGURES))})")
        return figure_files_of(name)

    files.__name__ = f"{name}_files"
    return files


fig1_files, fig2_files, fig3_files, fig4_files, fig5_files, fig6_files = (_figure_target(f"fig{i}") for i in range(1, 7))


def _grid(figure):
    fig = FIGURES[figure]
    return [(t, L) for t in sorted(fig["targets"]) for L in sorted(fig["depths"])]


# ---- inputs -----------------------------------------------------------------------


def data_store(wildcards):
    return f"{R}/{wildcards.figure}/data/{wildcards.target}.zarr"


def lrsearch_store(wildcards):
    return f"{R}/{wildcards.figure}/lrsearch/{wildcards.target}/L{wildcards.depth}.zarr"


def _run_kind(figure):
    """Store kind holding the network runs: CV-tuned training (depth sweep) or the fixed-width lr sweep."""
    return "sweep" if FIGURES[figure]["kind"] == "lr_sweep" else "train"


def figure_inputs(wildcards):
    f = wildcards.figure
    return [f"{R}/{f}/{kind}/{t}/L{L}.zarr" for t, L in _grid(f) for kind in (_run_kind(f), "ntk")]


def claims_inputs(wildcards):
    return [f"{R}/figures/{name}.csv" for name in sorted(FIGURES)]


# ---- params: the exact config values each job depends on (canonical JSON) ----------


def data_params(wildcards):
    return _json(dlc.data_spec(config, wildcards.figure, wildcards.target))


def lrsearch_params(wildcards):
    return _json(dlc.lrsearch_spec(config, wildcards.figure, wildcards.target, int(wildcards.depth)))


def train_params(wildcards):
    return _json(dlc.train_spec(config, wildcards.figure, wildcards.target, int(wildcards.depth)))


def sweep_params(wildcards):
    return _json(dlc.sweep_spec(config, wildcards.figure, wildcards.target, int(wildcards.depth)))


def ntk_params(wildcards):
    return _json(dlc.ntk_spec(config, wildcards.figure, wildcards.target, int(wildcards.depth)))


def figure_params(wildcards):
    return _json(dlc.figure_spec(config, wildcards.figure))


def figure_input_args(wildcards):
    f = wildcards.figure
    return " ".join(f"--input {kind}:{t}:{L}={R}/{f}/{kind}/{t}/L{L}.zarr" for t, L in _grid(f) for kind in (_run_kind(f), "ntk"))


def figure_kind(wildcards):
    return FIGURES[wildcards.figure]["kind"]


def config_params(wildcards):
    return _json({"stage": "config", "config": config})


def claims_params(wildcards):
    return _json(dlc.claims_spec(config))


def claims_input_args(wildcards):
    return " ".join(f"--input {name}={R}/figures/{name}.csv" for name in sorted(FIGURES))
