# Malach & Shalev-Shwartz (fractals): data (one fractal distribution) -> train (one net depth and width: every lr x seed).
# Paths and specs from depthlab.studies.fractals.specs; the shell command is common.smk's STAGE_SHELL.


rule fractals_data:
    output:
        directory(store_pattern("fractals", "data")),
    log:
        log_pattern("fractals", "data"),
    benchmark:
        bench_pattern("fractals", "data")
    params:
        spec=spec_of("fractals", "data"),
        inputs=inputs_json_of("fractals", "data"),
        output=first_output,
        code=code_of("fractals", "data"),
        results=results_root,
    wildcard_constraints:
        fractal="[a-z0-9]+",
        n="[0-9]+",
        pdeg="[0-9]+",
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule fractals_train:
    input:
        unpack(inputs_of("fractals", "train")),
    output:
        directory(store_pattern("fractals", "train")),
    log:
        log_pattern("fractals", "train"),
    benchmark:
        bench_pattern("fractals", "train")
    params:
        spec=spec_of("fractals", "train"),
        inputs=inputs_json_of("fractals", "train"),
        output=first_output,
        code=code_of("fractals", "train"),
        results=results_root,
    wildcard_constraints:
        fractal="[a-z0-9]+",
        n="[0-9]+",
        pdeg="[0-9]+",
        depth="[0-9]+",
        width="[0-9]+",
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL
