# depthlab: what depth does for neural networks (Mori & Ueda 2022 and related studies).
# Run: `make run` (default config), or `snakemake --configfile config/smoke.yaml fig2`.
from snakemake.utils import min_version

min_version("9.0")

# config/config.yaml unless a config was given on the command line (no silent deep-merge of two configs)
if not config:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/lrsearch.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/ntk.smk"
include: "workflow/rules/figure.smk"
include: "workflow/rules/claims.smk"


rule all:
    default_target: True
    input:
        all_figures,


rule fig1:
    input:
        fig1_files,


rule fig2:
    input:
        fig2_files,


rule fig3:
    input:
        fig3_files,


rule fig4:
    input:
        fig4_files,


rule fig5:
    input:
        fig5_files,


rule fig6:
    input:
        fig6_files,
