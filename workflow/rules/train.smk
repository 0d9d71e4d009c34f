rule train:
    input:
        data=data_store,
        lrsearch=lrsearch_store,
    output:
        directory(f"{R}/{{figure}}/train/{{target}}/L{{depth}}.zarr"),
    log:
        f"{R}/logs/{{figure}}/train/{{target}}/L{{depth}}.log",
    benchmark:
        f"{R}/benchmarks/{{figure}}/train/{{target}}/L{{depth}}.tsv"
    params:
        spec=train_params,
        device=DEVICE,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage train --spec {params.spec:q} --input data={input.data:q} --input lrsearch={input.lrsearch:q}"
        " --output {output:q} --threads {threads} --device {params.device} > {log:q} 2>&1"
