rule sweep:
    input:
        data=data_store,
    output:
        directory(f"{R}/{{figure}}/sweep/{{target}}/L{{depth}}.zarr"),
    log:
        f"{R}/logs/{{figure}}/sweep/{{target}}/L{{depth}}.log",
    benchmark:
        f"{R}/benchmarks/{{figure}}/sweep/{{target}}/L{{depth}}.tsv"
    params:
        spec=sweep_params,
        device=DEVICE,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage sweep --spec {params.spec:q} --input data={input.data:q} --output {output:q}"
        " --threads {threads} --device {params.device} > {log:q} 2>&1"
