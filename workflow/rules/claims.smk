rule claims:
    input:
        claims_inputs,
    output:
        report(f"{R}/claims.md", caption="../report/claims.rst", category="Claims"),
    log:
        f"{R}/logs/claims.log",
    benchmark:
        f"{R}/benchmarks/claims.tsv"
    params:
        spec=claims_params,
        inputs=claims_input_args,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage claims --spec {params.spec:q} {params.inputs} --output {output:q} > {log:q} 2>&1"


rule config_snapshot:
    output:
        report(f"{R}/config.used.yaml", caption="../report/config.rst", category="Configuration"),
    log:
        f"{R}/logs/config_snapshot.log",
    benchmark:
        f"{R}/benchmarks/config_snapshot.tsv"
    params:
        spec=config_params,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage config --spec {params.spec:q} --output {output:q} > {log:q} 2>&1"
