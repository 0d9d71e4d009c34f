rule figure:
    input:
        figure_inputs,
    output:
        png=f"{R}/figures/{{figure}}.png",
        pdf=f"{R}/figures/{{figure}}.pdf",
        csv=f"{R}/figures/{{figure}}.csv",
        provenance=f"{R}/figures/{{figure}}.provenance.json",
    log:
        f"{R}/logs/figures/{{figure}}.log",
    benchmark:
        f"{R}/benchmarks/figures/{{figure}}.tsv"
    params:
        spec=figure_params,
        inputs=figure_input_args,
        stem=f"{R}/figures/{{figure}}",
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage figure --spec {params.spec:q} {params.inputs} --output {params.stem:q} > {log:q} 2>&1"
