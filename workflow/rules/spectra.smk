# Bietti & Bach (spectra): eigen (Mercer eigenvalues per kernel and d), krr_data -> krr (learning curves).
# Paths, inputs and specs come from depthlab.studies.spectra.specs; the shell command is common.smk's STAGE_SHELL.


rule spectra_eigen:
    output:
        directory(store_pattern("spectra", "eigen")),
    log:
        log_pattern("spectra", "eigen"),
    benchmark:
        bench_pattern("spectra", "eigen")
    params:
        spec=spec_of("spectra", "eigen"),
        inputs=inputs_json_of("spectra", "eigen"),
        output=first_output,
        code=code_of("spectra", "eigen"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule spectra_krr_data:
    output:
        directory(store_pattern("spectra", "krr_data")),
    log:
        log_pattern("spectra", "krr_data"),
    benchmark:
        bench_pattern("spectra", "krr_data")
    params:
        spec=spec_of("spectra", "krr_data"),
        inputs=inputs_json_of("spectra", "krr_data"),
        output=first_output,
        code=code_of("spectra", "krr_data"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL


rule spectra_krr:
    input:
        unpack(inputs_of("spectra", "krr")),
    output:
        directory(store_pattern("spectra", "krr")),
    log:
        log_pattern("spectra", "krr"),
    benchmark:
        bench_pattern("spectra", "krr")
    params:
        spec=spec_of("spectra", "krr"),
        inputs=inputs_json_of("spectra", "krr"),
        output=first_output,
        code=code_of("spectra", "krr"),
        results=results_root,
    threads: 1
    conda:
        CONDA_ENV
    shell:
        STAGE_SHELL
