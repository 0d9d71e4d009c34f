# Depth separation: sawtooth_data, construction -> sawtooth (per level and architecture);
# radial_data -> radial (per target, distribution, d, budget, depth). Paths and specs from depthlab.studies.separation.specs.


rule separation_sawtooth_data:
    output:
        directory(store_pattern("separation", "sawtooth_data")),
    log:
        log_pattern("separation", "sawtooth_data"),
    benchmark:
        bench_pattern("separation", "sawtooth_data")
    params:
        spec=spec_of("separation", "sawtooth_data"),
        inputs=inputs_json_of("separation", "sawtooth_data"),
        output=first_output,
        code=code_of("separation", "sawtooth_data"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule separation_construction:
    output:
        directory(store_pattern("separation", "construction")),
    log:
        log_pattern("separation", "construction"),
    benchmark:
        bench_pattern("separation", "construction")
    params:
        spec=spec_of("separation", "construction"),
        inputs=inputs_json_of("separation", "construction"),
        output=first_output,
        code=code_of("separation", "construction"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule separation_sawtooth:
    input:
        unpack(inputs_of("separation", "sawtooth")),
    output:
        directory(store_pattern("separation", "sawtooth")),
    log:
        log_pattern("separation", "sawtooth"),
    benchmark:
        bench_pattern("separation", "sawtooth")
    params:
        spec=spec_of("separation", "sawtooth"),
        inputs=inputs_json_of("separation", "sawtooth"),
        output=first_output,
        code=code_of("separation", "sawtooth"),
        results=results_root,
    wildcard_constraints:
        level="[0-9]+",
        arch="(deep|shallow|construct)-w[0-9]+",
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule separation_radial_data:
    output:
        directory(store_pattern("separation", "radial_data")),
    log:
        log_pattern("separation", "radial_data"),
    benchmark:
        bench_pattern("separation", "radial_data")
    params:
        spec=spec_of("separation", "radial_data"),
        inputs=inputs_json_of("separation", "radial_data"),
        output=first_output,
        code=code_of("separation", "radial_data"),
        results=results_root,
    wildcard_constraints:
        target="relu|ball",
        dist="eldan_shamir|shell",
        d="[0-9]+",
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule separation_radial:
    input:
        unpack(inputs_of("separation", "radial")),
    output:
        directory(store_pattern("separation", "radial")),
    log:
        log_pattern("separation", "radial"),
    benchmark:
        bench_pattern("separation", "radial")
    params:
        spec=spec_of("separation", "radial"),
        inputs=inputs_json_of("separation", "radial"),
        output=first_output,
        code=code_of("separation", "radial"),
        results=results_root,
    wildcard_constraints:
        target="relu|ball",
        dist="eldan_shamir|shell",
        d="[0-9]+",
        budget="[0-9]+",
        depth="[0-9]+",
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL
