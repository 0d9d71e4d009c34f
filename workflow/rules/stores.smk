# One rule per store stage of every configured study, generated from the study registry: a study's stages, paths,
# job coordinates (wildcards and their constraints) and threads are declared in its folder (depthlab.studies.<name>),
# never here.  Every rule runs the same `depthlab stage` command (common.smk's STAGE_SHELL).
for _study in STUDIES:
    for _stage in get_study(_study).store_stages():

        rule:
            name:
                f"{_study}_{_stage.name}"
            input:
                unpack(inputs_of(_study, _stage.name)),
            output:
                directory(store_pattern(_study, _stage.name)),
            log:
                log_pattern(_study, _stage.name),
            benchmark:
                bench_pattern(_study, _stage.name)
            wildcard_constraints:
                **_stage.job_type.constraints(),
            priority: priority_of(_study, _stage.name)
            group:
                STORE_GROUP
            conda:
                CONDA_ENV
            threads: _stage.threads
            resources:
                mem_mb=resource_of(_study, _stage.name, "mem_mb"),
                runtime=resource_of(_study, _stage.name, "runtime"),
                gpu=resource_of(_study, _stage.name, "gpu"),
            params:
                spec=spec_of(_study, _stage.name),
                inputs=inputs_json_of(_study, _stage.name),
                output=first_output,
                code=code_of(_study, _stage.name),
                results=results_root,
            shell:
                STAGE_SHELL
