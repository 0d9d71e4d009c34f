rule ntk:
    input:
        data=data_store,
    output:
        directory(f"{R}/{{figure}}/ntk/{{target}}/L{{depth}}.zarr"),
    log:
        f"{R}/logs/{{figure}}/ntk/{{target}}/L{{depth}}.log",
    benchmark:
        f"{R}/benchmarks/{{figure}}/ntk/{{target}}/L{{depth}}.tsv"
    params:
        spec=ntk_params,
        device=DEVICE,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage ntk --spec {params.spec:q} --input data={input.data:q} --output {output:q}"
        " --threads {threads} --device {params.device} > {log:q} 2>&1"
