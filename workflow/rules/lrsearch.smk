rule lrsearch:
    input:
        data=data_store,
    output:
        directory(f"{R}/{{figure}}/lrsearch/{{target}}/L{{depth}}.zarr"),
    log:
        f"{R}/logs/{{figure}}/lrsearch/{{target}}/L{{depth}}.log",
    benchmark:
        f"{R}/benchmarks/{{figure}}/lrsearch/{{target}}/L{{depth}}.tsv"
    params:
        spec=lrsearch_params,
        device=DEVICE,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage lrsearch --spec {params.spec:q} --input data={input.data:q} --output {output:q}"
        " --threads {threads} --device {params.device} > {log:q} 2>&1"
