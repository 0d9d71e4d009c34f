# Mori & Ueda: data -> lrsearch (depth sweeps) -> train -> ntk (+ NNGP), entk (lr sweeps); figures and claims in report.smk.
# Paths, inputs and specs come from depthlab.studies.mori_ueda.specs; the shell command is common.smk's STAGE_SHELL.


rule mori_ueda_data:
    output:
        directory(store_pattern("mori_ueda", "data")),
    log:
        log_pattern("mori_ueda", "data"),
    benchmark:
        bench_pattern("mori_ueda", "data")
    params:
        spec=spec_of("mori_ueda", "data"),
        inputs=inputs_json_of("mori_ueda", "data"),
        output=first_output,
        code=code_of("mori_ueda", "data"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule mori_ueda_lrsearch:
    input:
        unpack(inputs_of("mori_ueda", "lrsearch")),
    output:
        directory(store_pattern("mori_ueda", "lrsearch")),
    log:
        log_pattern("mori_ueda", "lrsearch"),
    benchmark:
        bench_pattern("mori_ueda", "lrsearch")
    params:
        spec=spec_of("mori_ueda", "lrsearch"),
        inputs=inputs_json_of("mori_ueda", "lrsearch"),
        output=first_output,
        code=code_of("mori_ueda", "lrsearch"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule mori_ueda_train:
    input:
        unpack(inputs_of("mori_ueda", "train")),
    output:
        directory(store_pattern("mori_ueda", "train")),
    log:
        log_pattern("mori_ueda", "train"),
    benchmark:
        bench_pattern("mori_ueda", "train")
    params:
        spec=spec_of("mori_ueda", "train"),
        inputs=inputs_json_of("mori_ueda", "train"),
        output=first_output,
        code=code_of("mori_ueda", "train"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule mori_ueda_ntk:
    input:
        unpack(inputs_of("mori_ueda", "ntk")),
    output:
        directory(store_pattern("mori_ueda", "ntk")),
    log:
        log_pattern("mori_ueda", "ntk"),
    benchmark:
        bench_pattern("mori_ueda", "ntk")
    params:
        spec=spec_of("mori_ueda", "ntk"),
        inputs=inputs_json_of("mori_ueda", "ntk"),
        output=first_output,
        code=code_of("mori_ueda", "ntk"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule mori_ueda_entk:
    input:
        unpack(inputs_of("mori_ueda", "entk")),
    output:
        directory(store_pattern("mori_ueda", "entk")),
    log:
        log_pattern("mori_ueda", "entk"),
    benchmark:
        bench_pattern("mori_ueda", "entk")
    params:
        spec=spec_of("mori_ueda", "entk"),
        inputs=inputs_json_of("mori_ueda", "entk"),
        output=first_output,
        code=code_of("mori_ueda", "entk"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL
