rule figure:
    input:
        figure_inputs,
    output:
        png=report(f"{R}/figures/{{figure}}.png", caption="../report/figure.rst", category="Figures", subcategory="{figure}"),
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
        kind=figure_kind,
    threads: 1
    conda:
        "../../envs/depthlab.yaml"
    shell:
        "depthlab stage figure --spec {params.spec:q} {params.inputs} --output {params.stem:q} > {log:q} 2>&1"
