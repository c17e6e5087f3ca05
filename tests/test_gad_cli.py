"""`omnigraph detect`, `omnigraph pretrain refi-gad|arc` and `omnigraph benchmark gad` on small real graphs."""
import csv
import json

import numpy as np
import pytest
import torch

from omnigraph.benchmark.gad import PROTOCOLS, default_shots, load_gad, regime_shots
from omnigraph.benchmark.gad_metrics import metrics, support_mask
from omnigraph.benchmark.gad_report import mean_over_targets
from omnigraph.cli import build_parser, main


def test_detect_fingerprint_on_facebook(data_root, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["detect", "--model", "fingerprint", "--dataset", "facebook", "--seeds", "0,1",
                 "--shots-normal", "10", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    for key in ("model", "dataset", "regime", "auroc", "auroc_std", "auprc", "auprc_std", "seconds", "seeds", "k",
                "shots_normal", "shots_anomaly", "support_excluded", "support_included_variant"):
        assert key in res, key
    assert res["regime"] == "normal+anomaly-k" and res["shots_normal"] == res["shots_anomaly"] == 10  # 25 anomalies
    assert res["seeds"] == [0, 1] and res["support_excluded"] is True
    assert "AUROC" in capsys.readouterr().out
    # recompute seed 0 by hand: same support draw, support nodes excluded
    from omnigraph.estimators.detector import sample_support
    from omnigraph.estimators.fingerprint import FingerprintDetector

    data = load_gad("facebook")
    sn, sa = sample_support(data.y, 10, 10, 0)
    score = FingerprintDetector().decision_function(data, support_normal=sn, support_anomaly=sa)
    auroc, auprc = metrics(data.y, score, support_mask(data.num_nodes, sn, sa))
    assert res["per_seed"][0]["auroc_excluded"] == pytest.approx(auroc)
    assert res["per_seed"][0]["auprc_excluded"] == pytest.approx(auprc)
    rocs = [r["auroc_excluded"] * 100 for r in res["per_seed"]]
    assert res["auroc"] == pytest.approx(np.mean(rocs), abs=0.006)
    assert res["auroc_std"] == pytest.approx(np.std(rocs), abs=0.006)  # population std
    assert 50 < res["auroc"] <= 100
    # without --shots-* or --support-*: zero-shot, says so, reads no label for scoring (metrics only)
    capsys.readouterr()
    zero = tmp_path / "z.json"
    assert main(["detect", "--model", "fingerprint", "--dataset", "facebook", "--json", str(zero)]) == 0
    res = json.loads(zero.read_text())
    assert res["regime"] == "zero-shot" and res["support_normal"] == res["support_anomaly"] == 0
    assert "regime zero-shot: no labelled node was read" in capsys.readouterr().out
    atyp = (FingerprintDetector().fingerprint(data) - 50).abs().sum(1)
    assert res["auroc"] == pytest.approx(100 * metrics(data.y, atyp)[0], abs=0.006)


def test_detect_auto_picks_the_detector_for_the_regime(data_root, tmp_path, capsys):
    from omnigraph.cli.gad import auto_model

    assert auto_model(False, False) == "arc" and auto_model(True, False) == auto_model(False, True) == "refi-gad"
    out = tmp_path / "auto.json"
    assert main(["detect", "--dataset", "facebook", "--json", str(out)]) == 0       # no label: zero-shot, ARC
    res = json.loads(out.read_text())
    assert res["model"] == "arc" and res["regime"] == "zero-shot"
    assert "model auto: arc (no labelled anomaly" in capsys.readouterr().out
    data = load_gad("facebook")
    normal = torch.nonzero(data.y == 0).flatten()[:10].tolist()
    anomalous = torch.nonzero(data.y == 1).flatten()[:5].tolist()
    ids = ",".join(map(str, normal))
    assert main(["detect", "--dataset", "facebook", "--support-normal", ids, "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["model"] == "arc" and res["regime"] == "normal-k"
    assert main(["detect", "--dataset", "facebook", "--support-normal", ids, "--support-anomaly",
                 ",".join(map(str, anomalous)), "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["model"] == "refi-gad" and res["regime"] == "normal+anomaly-k" and res["support_anomaly"] == 5
    assert main(["detect", "--dataset", "facebook", "--shots-normal", "10", "--shots-anomaly", "0", "--seeds", "0",
                 "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["model"] == "arc" and res["regime"] == "normal-k" and res["shots_anomaly"] == 0


def test_detect_include_support_and_errors(data_root, tmp_path):
    out = tmp_path / "r.json"
    assert main(["detect", "--model", "fingerprint:lc", "--dataset", "gad/facebook", "--seeds", "3",
                 "--shots-normal", "10", "--shots-anomaly", "5", "--include-support", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["support_excluded"] is False and "support_excluded_variant" in res
    assert res["per_seed"][0]["auroc_included"] * 100 == pytest.approx(res["auroc"], abs=0.006)
    assert main(["detect", "--model", "fingerprint", "--dataset", "facebook", "--shots-anomaly", "30",
                 "--seeds", "0"]) == 2  # more shots than the 25 anomalies
    assert main(["detect", "--model", "fingerprint", "--dataset", "facebook", "--seeds", "a,b"]) == 2


def test_pretrain_cli_checkpoint_path_and_smoke_benchmark(data_root, tmp_path):
    run = tmp_path / "run"
    assert main(["pretrain", "refi-gad", "--sources", "gad/citeseer", "--epochs", "1", "--episodes-per-graph", "2",
                 "--shots", "10", "--seed", "0", "--out", str(run), "--quiet", "--support-episodes", "mixed"]) == 0
    cfg = json.loads((run / "model" / "config.json").read_text())
    assert cfg["model_type"] == "refi-gad" and cfg["card"]["sources"] == ["gad/citeseer"]
    assert cfg["card"]["support_episodes"] == "mixed"
    assert cfg["card"]["seed"] == 0 and "pretrain refi-gad" in cfg["card"]["command"]
    assert "--support-episodes mixed" in cfg["card"]["command"]      # the recorded command reproduces the run

    out = tmp_path / "bench"
    ckpt = str(run / "model")
    assert main(["benchmark", "gad", "--protocol", "smoke", "--models", f"fingerprint,fingerprint:degree,mine={ckpt}",
                 "--seeds", "0", "--out", str(out)]) == 0
    with open(out / "gad_results.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["target"] for r in rows} == {"gad/cora", "gad/facebook"}
    by = {(r["target"], r["regime"], r["model"]): r for r in rows}
    assert by["gad/cora", "normal-10", "fingerprint:degree"]["status"].startswith("n/a")
    assert by["gad/cora", "normal-10", "mine"]["status"] == "ok"     # refi-gad: pseudo-anomalies (normal-k)
    ok = by["gad/cora", "normal+anomaly-k", "mine"]
    assert ok["status"] == "ok" and ok["k_normal"] == "50" and 0 <= float(ok["auroc"]) <= 100
    assert 0 < float(ok["cold_seconds"])          # the first call, every per-graph cache cleared
    assert by["gad/facebook", "normal+anomaly-k", "fingerprint"]["k_anomaly"] == "10"
    md = (out / "gad_results.md").read_text()
    assert "normal+anomaly-k" in md and "published" in md and "| mean |" in md and ckpt in md
    assert "## Seconds per graph" in md and "| normal+anomaly-k | mine |" in md
    assert (out / "gad_results.png").stat().st_size > 1000
    assert (out / "gad_results_time.png").stat().st_size > 1000          # AUROC against seconds per graph

    # a checkpoint trained on a target of the protocol is refused
    leak = tmp_path / "leak"
    assert main(["pretrain", "refi-gad", "--sources", "gad/cora", "--epochs", "1", "--episodes-per-graph", "1",
                 "--shots", "10", "--out", str(leak), "--quiet"]) == 0
    assert main(["benchmark", "gad", "--protocol", "smoke", "--models", str(leak / "model"), "--seeds", "0",
                 "--out", str(tmp_path / "b2")]) == 2


def test_parser_registers_all_commands():
    parser = build_parser()
    args = parser.parse_args(["pretrain", "arc", "--sources", "gad/cora", "--epochs", "2"])
    assert args.model == "arc" and args.func.__module__ == "omnigraph.cli.gad"
    args = parser.parse_args(["benchmark", "gad", "--models", "refi-gad,arc,fingerprint"])
    assert args.protocol == "reduced-v1" and args.seeds == "0,1,2,3,4"
    args = parser.parse_args(["detect", "--dataset", "gad/cora"])
    assert args.model == "auto" and not args.include_support


def test_protocols_never_test_on_sources():
    for name, spec in PROTOCOLS.items():
        assert not set(spec["sources"]) & set(spec["targets"]), name


def test_metric_helpers():
    y = torch.tensor([0, 0, 1, 1, 0])
    s = torch.tensor([0.1, 0.2, 0.9, 0.3, 0.4])
    auroc, auprc = metrics(y, s)
    assert auroc == pytest.approx(5 / 6) and 0 < auprc <= 1
    with pytest.raises(FloatingPointError):
        metrics(y, torch.tensor([0.1, float("nan"), 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError, match="single class"):
        metrics(y, s, keep=torch.tensor([True, True, False, False, True]))
    assert default_shots(torch.cat([torch.ones(99), torch.zeros(900)])) == 10
    assert regime_shots("normal+anomaly-k", torch.cat([torch.ones(100), torch.zeros(900)])) == (50, 50)
    assert regime_shots("normal-10", y) == (10, 0)
    rows = [{"regime": "r", "model": m, "target": t, "status": "ok", "auroc": v}
            for m, t, v in (("a", "x", 80.0), ("a", "y", 60.0), ("b", "x", 70.0))]
    assert mean_over_targets(rows, "r", "a") == 80.0  # only targets where every model ran


def test_benchmark_refuses_a_checkpoint_whose_sources_are_unknown(data_root, tmp_path):
    """pretrain_arc through the Python API records the sources' names; an unnamed graph leaves them unknown,
    and the benchmark's leak guard then refuses the checkpoint unless told otherwise."""
    from gad_helpers import hub_anomaly_graph

    from omnigraph.benchmark.gad import run_benchmark
    from omnigraph.training.arc import pretrain_arc

    kw = {"epochs": 1, "d": 8, "hidden_channels": 16, "num_layers": 2, "num_context": 5, "progress_bar": False}
    named = hub_anomaly_graph(seed=0)
    named.name = "my-source"
    pretrain_arc(named, out_dir=tmp_path / "named", **kw)
    card = json.loads((tmp_path / "named" / "model" / "config.json").read_text())["card"]
    assert card["sources"] == ["my-source"]
    pretrain_arc(hub_anomaly_graph(seed=1), out_dir=tmp_path / "anon", **kw)
    assert "sources" not in json.loads((tmp_path / "anon" / "model" / "config.json").read_text())["card"]
    spec = f"arc={tmp_path / 'anon' / 'model'}"
    with pytest.raises(ValueError, match="does not say which graphs it was trained on"):
        run_benchmark(protocol="smoke", models=[spec], regimes=["normal-10"], seeds=[0], log=lambda _: None)
    out = run_benchmark(protocol="smoke", models=[spec], regimes=["normal-10"], seeds=[0], targets=["gad/cora"],
                        allow_unknown_sources=True, log=lambda _: None)
    assert out["rows"] and out["rows"][0]["status"] == "ok"
