# depthlab: what depth does for neural networks, one pipeline for several depth studies.
# Run: `make run` (config/config.yaml), or `snakemake --workflow-profile workflow/profiles/default --configfile FILE [TARGET ...]`.
# Targets: all (default), one per study (e.g. mori_ueda), one per figure (e.g. mori_ueda_fig2), or any output file.
from snakemake.utils import min_version

min_version("9.0")

# config/config.yaml unless a config was given on the command line (no silent deep-merge of two configs)
if not config:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/stores.smk"
include: "workflow/rules/report.smk"


# Around the jobs (depthlab.session): at parse time the run id, a replaced run's cluster job stepping aside, a restart
# settling a killed run, a dry run's folder check; when jobs start the run lock, the folder claim, the speed probe and
# the quiet terminal's plan.
dls.at_parse(workflow, config, R)


onstart:
    dls.on_start(workflow, config, R, planned=planned_jobs)


rule all:
    default_target: True
    input:
        all_targets,


# one target per configured study and per figure: `snakemake mori_ueda`, `snakemake mori_ueda_fig2`
for _study in STUDIES:

    rule:
        name:
            _study
        input:
            study_targets(_study),

    for _figure in get_study(_study).figures(config):

        rule:
            name:
                f"{_study}_{_figure}"
            input:
                figure_targets(_study, _figure),


# A target that is no rule and no path: one line naming the close matches, not Snakemake's generic error.
unknown_target = dls.check_targets(workflow)
if unknown_target:
    sys.exit(unknown_target)
