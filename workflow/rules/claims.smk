rule claims:
    input:
        claims_inputs,
    output:
        f"{R}/claims.md",
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
