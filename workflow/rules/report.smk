# Figures, claims, the claims index and the config snapshot: the same rules for every study.  Seconds long each, they
# run where Snakemake runs, never through a cluster's queue.


localrules:
    figure,
    claims,
    claims_index,
    config_snapshot,


rule figure:
    input:
        unpack(figure_inputs),
    output:
        png=report(
            f"{R}/{{study}}/figures/{{figure}}.png",
            caption="../report/figure.rst",
            category="{study}",
            subcategory="Figures",
            labels=report_labels("figure"),
        ),
        pdf=f"{R}/{{study}}/figures/{{figure}}.pdf",
        csv=f"{R}/{{study}}/figures/{{figure}}.csv",
        provenance=f"{R}/{{study}}/figures/{{figure}}.provenance.json",
    log:
        f"{R}/logs/{{study}}/figures/{{figure}}.log",
    benchmark:
        f"{R}/benchmarks/{{study}}/figures/{{figure}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    params:
        spec=figure_spec,
        inputs=figure_inputs_json,
        output=figure_stem,
        code=figure_code,
        results=results_root,
    shell:
        STAGE_SHELL


rule claims:
    input:
        unpack(claims_inputs),
    output:
        md=f"{R}/{{study}}/claims.md",
        json=f"{R}/{{study}}/claims.json",
        html=report(
            f"{R}/{{study}}/claims.html",
            caption="../report/claims.rst",
            category="{study}",
            subcategory="Claims",
            labels=report_labels("claims"),
        ),
        forest=report(
            f"{R}/{{study}}/claims.forest.png",
            caption="../report/forest.rst",
            category="{study}",
            subcategory="Claims",
            labels=report_labels("forest"),
        ),
        provenance=f"{R}/{{study}}/claims.provenance.json",
    log:
        f"{R}/logs/{{study}}/claims.log",
    benchmark:
        f"{R}/benchmarks/{{study}}/claims.tsv"
    conda:
        CONDA_ENV
    threads: 1
    params:
        spec=claims_spec,
        inputs=claims_inputs_json,
        output=first_output,
        code=claims_code,
        results=results_root,
    shell:
        STAGE_SHELL


rule claims_index:
    input:
        unpack(index_inputs),
    output:
        md=f"{R}/claims.md",
        html=report(
            f"{R}/claims.html", caption="../report/index.rst", category="Claims index", labels=report_labels("index")
        ),
        provenance=f"{R}/claims.provenance.json",
    log:
        f"{R}/logs/claims_index.log",
    benchmark:
        f"{R}/benchmarks/claims_index.tsv"
    conda:
        CONDA_ENV
    threads: 1
    params:
        inputs=index_inputs_json,
        results=results_root,
        scale="smoke" if config["smoke"] else "as configured",
    shell:
        "depthlab index --inputs {params.inputs:q} --output {output.md:q} --results {params.results:q}"
        " --scale {params.scale:q} > {log:q} 2>&1"


rule config_snapshot:
    output:
        yaml=f"{R}/config.used.yaml",
        html=report(
            f"{R}/config.used.html",
            caption="../report/config.rst",
            category="Configuration",
            labels=report_labels("config"),
        ),
    log:
        f"{R}/logs/config_snapshot.log",
    benchmark:
        f"{R}/benchmarks/config_snapshot.tsv"
    conda:
        CONDA_ENV
    threads: 1
    params:
        config=config_json,
    shell:
        "depthlab snapshot --config-json {params.config:q} --output {output.yaml:q} > {log:q} 2>&1"
