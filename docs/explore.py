# %% [markdown]
# # Exploring a depthlab results folder
#
# A percent-format script: Jupyter (with jupytext), VS Code and PyCharm open it as a notebook, and
# `python docs/explore.py` runs it top to bottom. It reads the results folder named by `$DEPTHLAB_RESULTS`, or else
# the folder of the config named by `$DEPTHLAB_CONFIG` (default `config/config.yaml`, whose `make run` writes
# `results/default`), and, when `$DEPTHLAB_EXPLORE_OUT` names a folder, saves its pictures
# there instead of showing them. The test suite runs it on the smoke results.
#
# `depthlab.open_results(results, study, stage, **select)` gives one `xarray.Dataset` per stage: the job
# coordinates from each store's provenance record as dimensions, the stores' own dimensions after them, arrays
# read lazily, NaN where jobs differ in shape, and each job's `record_hash` and `store` path as coordinates.

# %%
import os
from pathlib import Path

import matplotlib

if os.environ.get("DEPTHLAB_EXPLORE_OUT"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import depthlab
import depthlab.config as dlc

CONFIG = os.environ.get("DEPTHLAB_CONFIG", "config/config.yaml")
RESULTS = Path(
    os.environ.get("DEPTHLAB_RESULTS") or dlc.validate(dlc.read_yaml(CONFIG), memory=False, source=CONFIG)["results"]
)
OUT = Path(os.environ["DEPTHLAB_EXPLORE_OUT"]) if os.environ.get("DEPTHLAB_EXPLORE_OUT") else None
print(depthlab.list_results(RESULTS))  # what `depthlab ls RESULTS` prints


def show(fig, name):
    if OUT is None:
        plt.show()
    else:
        OUT.mkdir(parents=True, exist_ok=True)
        fig.savefig(OUT / f"{name}.png", dpi=80)
        plt.close(fig)


# %% [markdown]
# ## Mori & Ueda, Fig. 2: the trained nets and their kernels, every job of the figure

# %%
train = depthlab.open_results(RESULTS, "mori_ueda", "train", figure="fig2")
ntk = depthlab.open_results(RESULTS, "mori_ueda", "ntk", figure="fig2")
train  # noqa: B018 (a notebook cell: shows the Dataset)

# %% [markdown]
# Each (target, depth) trained at its own cross-validated rate: `lr` is a variable of the job (its value per target and
# depth), not a dimension, and `converged` says whether each net stopped because it was done.

# %%
nn = train.test_error.mean("seed").squeeze("figure")
print(train.lr.squeeze("figure").to_pandas())  # the chosen rate of every (target, depth)
print("nets that did not converge:", int((~train.converged).sum()))
kernel = ntk.test_error.squeeze("figure")
fig, ax = plt.subplots(figsize=(5, 4))
for i, target in enumerate(nn.target.values):
    color = f"C{i}"
    ax.plot(nn.depth, nn.sel(target=target), "-o", color=color, label=f"{target}: net")
    ax.plot(kernel.depth, kernel.sel(target=target, kernel="ntk"), "--", color=color, label=f"{target}: NTK")
ax.set_xlabel("depth L")
ax.set_ylabel("test error")
ax.legend(fontsize=7)
show(fig, "fig2_from_stores")

# %% [markdown]
# The same numbers, read back from the figure's own table: the CSV and the stores agree (to the six significant
# digits the CSVs keep).

# %%
csv = pd.read_csv(RESULTS / "mori_ueda" / "figures" / "fig2.csv")
by_job = csv.groupby(["target", "depth"])[["nn_test_error", "ntk_test_error"]].mean()
checked = 0
for (target, depth), row in by_job.iterrows():
    np.testing.assert_allclose(float(nn.sel(target=target, depth=depth)), row.nn_test_error, rtol=1e-5)
    np.testing.assert_allclose(
        float(kernel.sel(target=target, depth=depth, kernel="ntk")), row.ntk_test_error, rtol=1e-5
    )
    checked += 1
assert checked == nn.sizes["target"] * nn.sizes["depth"], "every (target, depth) of the stores is in fig2.csv"
print(f"fig2.csv agrees with the stores at all {checked} (target, depth) pairs")

# %% [markdown]
# ## One training history and one learning-rate search

# %%
job = dict(target=str(nn.target.values[0]), depth=int(nn.depth.values[-1]))
one = train.sel(figure="fig2", **job)
lr = float(one.lr)  # the rate this job trained at
history = one.history.compute()
fig, ax = plt.subplots(figsize=(5, 3.5))
epochs = one.check_epoch.compute()
for seed in history.seed.values:
    ax.plot(epochs, history.sel(seed=seed), "-o", label=f"seed {seed}")
ax.set_xlabel("epoch")
ax.set_ylabel("training loss")
ax.set_yscale("log")
ax.set_title(f"{job['target']}, depth {job['depth']}, lr {lr:.3g}")
ax.legend(fontsize=7)
show(fig, "training_history")

# %%
search = depthlab.open_results(RESULTS, "mori_ueda", "lrsearch", figure="fig2").sel(figure="fig2", **job)
fig, ax = plt.subplots(figsize=(5, 3.5))
for fold in search.fold.values:
    ax.plot(search.lr, search.val_error.sel(fold=fold), "o", label=f"fold {fold}")
ax.axvline(float(search.best_lr), color="grey", ls=":", label="chosen rate")
ax.set_xscale("log")
ax.set_xlabel("learning rate")
ax.set_ylabel("validation error")
ax.legend(fontsize=7)
show(fig, "lr_search")
print(f"lr search of {job}: chose {float(search.best_lr):.4g}; the net trained at {lr:.4g}")
assert np.isclose(float(search.best_lr), lr), "the net trains at the rate its search chose"
