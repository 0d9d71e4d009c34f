"""What would decide an inconclusive row, and ``depthlab decide``."""

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import BIN, smk

from depthlab import config as dlc
from depthlab import decide, suggest
from depthlab.costs import report as cost_report
from depthlab.claims import Verdict, render
from depthlab.studies import get_study
from depthlab.study import ClaimsJob


def test_the_seeds_that_bring_z_to_Z_follow_the_square_root_law():
    """n = n0 (Z / z)^2: the SE of a mean over n seeds falls as 1 / sqrt(n), so z grows as sqrt(n).  Checked against the
    law itself: with n seeds the row's z would be z sqrt(n / n0) >= 2, and with n - 1 below 2."""
    for n0, z in ((3, 1.36), (3, 1.28), (3, 0.74), (2, 1.86), (3, -0.53), (3, 1.49)):
        n = suggest.needed_seeds(n0, z)
        assert abs(z) * (n / n0) ** 0.5 >= 2.0 - 1e-9
        assert n == n0 + 1 or abs(z) * ((n - 1) / n0) ** 0.5 < 2.0
    assert suggest.needed_seeds(3, 1.36) == 7 and suggest.needed_seeds(3, 0.74) == 22  # the 7-8 and about 22
    assert suggest.needed_seeds(3, None) is None and suggest.needed_seeds(3, 0.0) is None
    assert suggest.needed_seeds(3, 5.0) == 4  # already past Z by its z: one more seed, never fewer


def test_merged_values_keep_the_larger_list_and_number():
    assert suggest.merge_value([0, 1, 2], [0, 1, 2, 3, 4]) == [0, 1, 2, 3, 4]
    assert suggest.merge_value([0.0625, 0.25], [0.015625, 0.0625, 0.25]) == [0.0625, 0.25, 0.015625]
    assert suggest.merge_value(6000, 3000) == 6000


@pytest.mark.parametrize("arg,secs", [("2h", 7200), ("90m", 5400), ("600s", 600), ("1.5", 5400), ("45min", 2700)])
def test_budgets_parse(arg, secs):
    assert decide.parse_budget(arg) == secs


@pytest.mark.parametrize("arg", ["", "two hours", "-1h", "0", "1e400h", "2d"])
def test_bad_budgets_are_refused_in_one_line(arg):
    with pytest.raises(decide.DecideError, match="--budget"):
        decide.parse_budget(arg)


def _published_default():
    """config/config.yaml with the values of the published default (010a45a) that this issue changed: the rows below
    are that run's."""
    cfg = dlc.load("config/config.yaml")
    st = cfg["studies"]
    for f in ("fig1", "fig5", "fig6"):
        st["mori_ueda"]["figures"][f]["seeds"] = [0, 1, 2]
    st["acceleration"].update(max_iterations=5000, patience_factor=3)
    st["separation"]["radial"]["training"]["max_epochs"] = 3000
    st["separation"]["radial"]["seeds"] = [0, 1]
    st["separation"]["radial"]["learner"]["flow_lrs"] = [0.0625, 0.25]
    return dlc.validate(cfg, memory=False)


def _row(claim, figure, reason, *problems, z=None):
    """An inconclusive row: its reason for people, its problem kinds (what decides it reads only these)."""
    return Verdict(claim, "s", figure, "subject", None, "ev", reason=reason, z=z, problems=list(problems))


def test_each_row_is_priced_as_the_plan_of_its_changed_config():
    """The claims stage prices a suggestion as the planned seconds of the jobs the change adds (a job whose spec
    changes runs again; the figures and claims rerun): at least what the plan of a config changed by hand grows by, at
    most that plan's whole, and here the study's fig1 training jobs (their specs hold the seeds), figures and claims."""
    cfg = _published_default()
    study = get_study("mori_ueda")
    spec = study.spec(cfg, "claims", ClaimsJob())
    assert spec.config["studies"]["mori_ueda"] == cfg["studies"]["mori_ueda"] and "device" not in spec.config
    rows = [
        _row("3", "fig1", "inside the error bars: err(L=2) - err(L=1)", "error_bars", z=1.36),
        _row("5", "fig3", "scale: at width 200 the net is not shown to be in the lazy regime", "scale"),
        Verdict("1", "s", "fig2", "2-local", True, "ev"),
    ]
    decide.annotate(study, spec, rows)
    d = rows[0].to_decide
    assert d["text"] == "seeds 7 on fig1" and d["changes"] == [
        {"key": "studies.mori_ueda.figures.fig1.seeds", "value": [0, 1, 2, 3, 4, 5, 6]}
    ]

    def seconds(c):
        c = copy.deepcopy(c)
        c["studies"] = {"mori_ueda": c["studies"]["mori_ueda"]}
        return sum(r.seconds_total for r in cost_report.plan(c, results="/nonexistent"))

    by_hand = copy.deepcopy(cfg)
    by_hand["studies"]["mori_ueda"]["figures"]["fig1"]["seeds"] = list(range(7))
    assert seconds(by_hand) - seconds(cfg) <= d["seconds"] <= seconds(by_hand) and d["seconds"] > 0
    rows_by_hand = {
        r.stage: r.seconds_total
        for r in cost_report.plan({**by_hand, "studies": {"mori_ueda": by_hand["studies"]["mori_ueda"]}}, results="/x")
    }
    assert d["seconds"] >= rows_by_hand["figure"] + rows_by_hand["claims"]
    assert rows[1].to_decide["text"].startswith("paper scale") and rows[1].to_decide["seconds"] is None
    assert rows[2].to_decide is None  # a row that holds needs nothing
    md = render("t", rows, [])
    assert "To decide: seeds 7 on fig1 (+" in md and "core-min planned)." in md
    assert "To decide: paper scale (the lazy regime" in md


def test_the_papers_steps_beyond_the_schema_are_paper_scale_and_a_refused_change_is_said_not_priced(monkeypatch):
    cfg = dlc.load("config/config.yaml")
    study = get_study("fractals")
    spec = study.spec(cfg, "claims", ClaimsJob())
    spec.config["studies"]["fractals"]["data"]["n_train"] = 100  # 1e6 steps would be 1e6 epochs: over the schema's cap
    rows = [_row("M2", "fig5", "3 of 6 nets it rests on did not converge", "not_converged")]
    decide.annotate(study, spec, rows)
    assert rows[0].to_decide["changes"] == [] and rows[0].to_decide["text"].startswith("paper scale"), rows[0].to_decide
    # a hook whose change the schema refuses anyway: said, never priced as if it ran
    import importlib

    mod = importlib.import_module(study.stage("claims").module)
    monkeypatch.setattr(
        mod,
        "to_decide",
        lambda v, c: suggest.Suggestion("max_epochs 10^9", [("studies.fractals.training.max_epochs", 10**9)]),
    )
    rows = [_row("M2", "fig5", "3 of 6 nets it rests on did not converge", "not_converged")]
    decide.annotate(study, spec, rows)
    assert (
        rows[0].to_decide["seconds"] is None
        and "not priced: the change is not a valid config" in rows[0].to_decide["text"]
    )


def test_the_study_hooks_read_the_published_default_reasons():
    """The reasons of the published default's inconclusive rows (docs/default-claims.md at 010a45a), each mapped to the
    knob the issue's table names."""
    cfg = _published_default()
    cases = {
        "acceleration": (
            _row("A2", "iterations", "budget: judged at the loose target f = 0.01", "budget"),
            {"studies.acceleration.max_iterations": 50000, "studies.acceleration.patience_factor": 30},
        ),
        "separation": (
            _row(
                "R4",
                "learner_alpha",
                "no flow rate in the gradient-flow regime at d=4 (tolerance 0.05; add a "
                "smaller flow rate); the reduced model did not train (d=16 ...)",
                "flow_rate",
                "not_trained",
            ),
            {
                "studies.separation.radial.learner.flow_lrs": [0.015625, 0.0625, 0.25],
                "studies.separation.radial.learner.steps": 96000,
            },
        ),
        "fractals": (
            _row("M1", "fig4", "inside the error bars: depth 5 - depth 1 at 801 parameters", "error_bars", z=1.86),
            {"studies.fractals.training.seeds": [0, 1, 2]},
        ),
    }
    for name, (row, want) in cases.items():
        study = get_study(name)
        decide.annotate(study, study.spec(cfg, "claims", ClaimsJob()), [row])
        assert {c["key"]: c["value"] for c in row.to_decide["changes"]} == want, (name, row.to_decide)
        assert row.to_decide["seconds"] > 0
    r1 = [
        _row("R1", "radial_error", "1 of 12 nets it rests on did not converge (still improving ...)", "not_converged"),
        _row("R1", "radial_error", "inside the error bars: slope(depth 1) - slope(depth 2)", "error_bars", z=1.15),
    ]
    decide.annotate(get_study("separation"), get_study("separation").spec(cfg, "claims", ClaimsJob()), r1)
    assert r1[0].to_decide["changes"] == [{"key": "studies.separation.radial.training.max_epochs", "value": 6000}]
    assert r1[1].to_decide["text"] == "seeds 7 on the radial nets"


def md_of(path: Path) -> str:
    return path.with_suffix(".md").read_text()


def test_every_inconclusive_row_of_the_smoke_run_says_what_would_decide_it(smoke_run):
    """Each says what would decide it, and each config change it names is one the schema takes (at smoke scale the
    paper's steps are "paper scale", not a max_epochs beyond the schema's bound), priced above zero."""
    n = 0
    for path in smoke_run.results.glob("*/claims.json"):
        for r in json.loads(path.read_text()):
            if r["kind"] == "claim" and r["verdict"] == "inconclusive":
                n += 1
                d = r["to_decide"]
                assert d["text"] and isinstance(d["changes"], list), r
                assert (d["seconds"] is None) == (not d["changes"]), r  # every change is a valid config, priced
                # a change adds jobs, priced at what they plan at the run's own scale: never "+0"
                assert d["seconds"] is None or d["seconds"] > 0, r
                assert "not priced" not in d["text"] and "+0 core-s" not in md_of(path), r
        md = path.with_suffix(".md").read_text()
        assert md.count("To decide: ") == sum(
            r["verdict"] == "inconclusive" and r["kind"] == "claim" for r in json.loads(path.read_text())
        )
    assert n > 0


@pytest.mark.slow  # a second run beside the shared smoke run (about a minute and a half): `make test` stays under 10 minutes
def test_decide_forks_the_seed_changes_and_the_fork_decides_those_rows(smoke_run, tmp_path):
    """Smoke rows left inconclusive for one seed (the fractal rows' 'to decide: training.seeds [0, 1]'): depthlab decide
    writes the fork's config and forks the run; the fork's run trains the second seeds alone and its rows no longer
    rest on one run."""
    base = smoke_run.results
    before = json.loads((base / "fractals" / "claims.json").read_text())
    one_seed = [
        r
        for r in before
        if r["verdict"] == "inconclusive"
        and r["to_decide"]["changes"] == [{"key": "studies.fractals.training.seeds", "value": [0, 1]}]
    ]
    assert one_seed, "the smoke's fractal rows no longer rest on one seed: this test needs another case"
    out = tmp_path / "f.yaml"
    p = subprocess.run(
        [str(BIN / "depthlab"), "decide", str(base), "--study", "fractals", "--budget", "1h", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "to decide (" in p.stdout and "training.seeds [0, 1]" in p.stdout and "next: make run CONFIG=" in p.stdout
    new = yaml.safe_load(out.read_text())
    assert new["studies"]["fractals"]["training"]["seeds"] == [0, 1] and new["results"] == str(tmp_path / "f")
    rest = copy.deepcopy(new)
    rest["studies"]["fractals"]["training"]["seeds"] = smoke_run.config["studies"]["fractals"]["training"]["seeds"]
    rest = dlc.validate(rest, memory=False)  # defaults filled in, as the workflow sees it
    assert {k: v for k, v in rest.items() if k != "results"} == {
        k: v for k, v in smoke_run.config.items() if k != "results"
    }
    smk(tmp_path, "--configfile", str(out))
    after = {
        (r["claim"], r["subject"]): r for r in json.loads((tmp_path / "f" / "fractals" / "claims.json").read_text())
    }
    for r in one_seed:
        a = after[(r["claim"], r["subject"])]
        assert "training.seeds [0, 1]" not in (a["to_decide"] or {}).get("text", ""), a
        assert "one trajectory per net" not in a["reason"], a


def test_decide_refuses_bad_input_in_one_line(smoke_run, tmp_path):
    cases = [
        ([str(smoke_run.results), "--study", "nope"], "not a study of this run"),
        ([str(smoke_run.results), "--budget", "soon"], "--budget"),
        ([str(tmp_path)], "no config.used.yaml"),
        ([str(tmp_path / "missing")], "neither a config file nor a results folder"),
        ([str(smoke_run.results), "--out", str(smoke_run.results / "x.yaml"), "--study", "fractals"], "results folder"),
    ]
    for args, say in cases:
        p = subprocess.run([str(BIN / "depthlab"), "decide", *args], capture_output=True, text=True, timeout=300)
        assert p.returncode == 2 and say in p.stderr and len(p.stderr.strip().splitlines()) == 1, (
            args,
            p.stdout,
            p.stderr,
        )
    assert not (smoke_run.results / "x.yaml").exists()


def test_decide_refuses_a_claims_file_the_audit_rejects(smoke_run, tmp_path):
    """One row's to_decide.changes edited to {device: cuda} in a copy's claims.json: decide refuses in one line naming
    the file and writes nothing (before, it wrote a fork config with device: cuda while audit --strict said the file
    was edited); a malformed change (a string) in a file whose record vouches for it is one line too."""
    run = smoke_run.copy(tmp_path / "w").results
    path = run / "mori_ueda" / "claims.json"
    rows = json.loads(path.read_text())
    row = next(r for r in rows if r.get("to_decide") and r["to_decide"].get("changes"))
    row["to_decide"]["changes"] = [{"key": "device", "value": "cuda"}]
    path.write_text(json.dumps(rows))
    out = tmp_path / "d.yaml"
    args = [str(BIN / "depthlab"), "decide", str(run), "--budget", "100h", "--no-fork", "--out", str(out)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stdout + p.stderr
    assert f"{path}: edited since its claims job wrote it" in p.stderr, p.stderr
    assert not out.exists()
    with pytest.raises(suggest.SuggestionError, match="not a list of"):
        suggest.Suggestion.from_dict({"text": "x", "changes": "training.seeds"})
    with pytest.raises(suggest.SuggestionError, match="not a list of"):
        suggest.Suggestion.from_dict({"text": "x", "changes": [{"key": "training.seeds"}]})


@pytest.mark.parametrize("out", ["f2", "/", "x.json"])
def test_decide_out_without_a_yaml_suffix_is_refused_before_anything_is_written(smoke_run, tmp_path, out):
    """--out f2 made the fork's results folder f2 too, the very config file: decide wrote it, then failed.  Now it
    refuses first (and --out / was a ValueError traceback)."""
    p = subprocess.run(
        [str(BIN / "depthlab"), "decide", str(smoke_run.results), "--budget", "100h", "--no-fork", "--out", out],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert p.returncode == 2 and "name a .yaml file" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not any(tmp_path.iterdir())


def test_decide_writes_its_config_beside_the_runs_config_not_in_a_results_folder(smoke_run, tmp_path):
    """Without --out, the fork's config lands beside the config the run's folder belongs to (for the smoke run, beside
    its smoke.yaml), never in the folder that holds results folders."""
    from depthlab import folder

    run = smoke_run.copy(tmp_path / "w").results
    owner = run / folder.OWNER
    rec = json.loads(owner.read_text())
    home = tmp_path / "configs" / "smoke.yaml"  # the copy's own config file, so nothing lands beside the shared run's
    home.parent.mkdir()
    home.write_bytes(Path(rec["source"]).read_bytes())
    owner.write_text(json.dumps({**rec, "source": str(home)}))
    assert folder.owner_config(run) == home
    p = subprocess.run(
        [str(BIN / "depthlab"), "decide", str(run), "--budget", "1h", "--no-fork", "--study", "fractals"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    written = home.parent / f"{run.name}-decide.yaml"
    assert (
        f"wrote {written}" in p.stdout and written.is_file() and not (run.parent / f"{run.name}-decide.yaml").exists()
    )
