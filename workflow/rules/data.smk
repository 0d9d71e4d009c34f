rule data:
    output:
        directory(f"{R}/{{figure}}/data/{{target}}.zarr"),
    log:
        f"{R}/logs/{{figure}}/data/{{target}}.log",
    benchmark:
        f"{R}/benchmarks/{{figure}}/data/{{target}}.tsv"
    params:
        spec=data_params,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage data --spec {params.spec:q} --output {output:q} --threads {threads} > {log:q} 2>&1"
