"""A user's own graph file through ``load_dataset`` and the command line (the user's path, issue #16 §8).

A file's task is explicit (a ``task`` entry or ``task=``, never guessed); node-classification labels
(``-1`` = unlabelled) and the user's masks survive loading; ``y`` is optional; ``omnigraph predict`` and
``omnigraph detect`` write one row per node with ``--out`` and print metrics only when labels allow.
"""
from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from gad_helpers import hub_anomaly_graph
from rgvt_helpers import planted_graph

from omnigraph.cli import main
from omnigraph.datasets import load_dataset, save_gad_npz, save_nc_file


def _nc_graph(num_classes: int = 5, n: int = 150):
    g = planted_graph(n=n, num_classes=num_classes, f=8, seed=0)
    for key in ("train_mask", "val_mask", "test_mask"):
        if key in g:
            del g[key]
    return g


def test_a_file_must_say_its_task(tmp_path):
    g = _nc_graph()
    plain = tmp_path / "plain.pt"
    torch.save({"x": g.x, "edge_index": g.edge_index, "y": g.y}, plain)
    with pytest.raises(ValueError, match="does not say which task"):
        load_dataset(plain)
    np.savez(tmp_path / "plain.npz", x=g.x.numpy(), edge_index=g.edge_index.numpy(), y=g.y.numpy())
    with pytest.raises(ValueError, match="does not say which task"):
        load_dataset(tmp_path / "plain.npz")
    data = load_dataset(plain, task="nc")
    assert data.task == "nc" and torch.equal(data.y, g.y) and int(data.y.max()) == 4   # 5 classes, not refused
    with pytest.raises(ValueError, match="task must be"):
        load_dataset(plain, task="classification")


def test_three_or_four_classes_are_never_read_as_pygod_bit_codes_silently(tmp_path):
    g = _nc_graph(num_classes=4)
    path = tmp_path / "g.pt"
    torch.save({"x": g.x, "edge_index": g.edge_index, "y": g.y}, path)
    assert torch.equal(load_dataset(path, task="nc").y, g.y)                 # class ids kept
    gad = load_dataset(path, task="gad")                                     # asked for: pygod's bit code
    assert torch.equal(gad.y, (g.y > 0).long()) and gad.task == "gad"


def test_labels_minus_one_and_masks_survive_and_the_stored_task_wins(tmp_path):
    g = _nc_graph()
    g.y = g.y.clone()
    g.y[100:] = -1
    g.train_mask = torch.zeros(150, dtype=torch.bool)
    g.train_mask[:60] = True
    g.val_mask = torch.zeros(150, dtype=torch.bool)
    g.val_mask[60:100] = True
    for suffix in (".pt", ".npz"):
        path = save_nc_file(g, tmp_path / f"mine{suffix}")
        data = load_dataset(path)                                            # the file says task 'nc'
        assert data.task == "nc" and torch.equal(data.y, g.y)
        assert torch.equal(data.train_mask, g.train_mask) and torch.equal(data.val_mask, g.val_mask)
        assert getattr(data, "test_mask", None) is None
        with pytest.raises(ValueError, match="says task='nc' but task='gad'"):
            load_dataset(path, task="gad")


def test_y_is_optional(tmp_path):
    g = _nc_graph()
    del g.y
    assert getattr(load_dataset(save_nc_file(g, tmp_path / "u.pt")), "y", None) is None
    h = hub_anomaly_graph()
    del h.y
    data = load_dataset(save_gad_npz(h, tmp_path / "u.npz"))
    assert data.task == "gad" and getattr(data, "y", None) is None


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def test_predict_writes_every_node_for_a_file_with_unlabelled_nodes(tmp_path, capsys):
    g = _nc_graph(num_classes=3, n=120)
    g.y = g.y.clone()
    g.y[60:] = -1                                          # half the nodes unlabelled, no masks, no test split
    path = save_nc_file(g, tmp_path / "mine.pt")
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", "graphany", "--dataset", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "val" in printed and "test" not in printed.split("(split")[1].split(")")[1]
    header, rows = _read_csv(out)
    assert header == ["node", "label", "pred", "prob_0", "prob_1", "prob_2"] and len(rows) == 120
    assert [int(r[1]) for r in rows[60:]] == [-1] * 60
    probs = np.array([[float(v) for v in r[3:]] for r in rows])
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-4)
    assert all(int(r[2]) == int(np.argmax(p)) for r, p in zip(rows, probs))
    for suffix in (".npy", ".pt"):
        assert main(["predict", "--model", "graphany", "--dataset", str(path), "--out", str(tmp_path / f"p{suffix}")]) == 0
    assert np.load(tmp_path / "p.npy").shape == (120, 5)
    assert set(torch.load(tmp_path / "p.pt", weights_only=True)) == {"label", "pred", "prob_0", "prob_1", "prob_2"}


def test_predict_and_detect_from_a_node_table_and_an_edge_list(tmp_path):
    g = _nc_graph(num_classes=3, n=90)
    ids = [f"user-{i:03d}" for i in range(90)]
    with open(tmp_path / "nodes.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", *[f"f{j}" for j in range(8)], "group"])
        for i in range(90):
            w.writerow([ids[i], *g.x[i].tolist(), "" if i >= 45 else int(g.y[i])])
    with open(tmp_path / "edges.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b"])
        w.writerows([ids[a], ids[b]] for a, b in g.edge_index.t().tolist())
    tables = ["--nodes", str(tmp_path / "nodes.csv"), "--edges", str(tmp_path / "edges.csv")]
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", "graphany", *tables, "--label-column", "group", "--out", str(out)]) == 0
    _, rows = _read_csv(out)
    assert [r[0] for r in rows] == ids and [r[1] for r in rows[45:]] == ["-1"] * 45
    with open(tmp_path / "plain.csv", "w", newline="") as f:      # no label column at all
        w = csv.writer(f)
        w.writerow(["id", *[f"f{j}" for j in range(8)]])
        w.writerows([ids[i], *g.x[i].tolist()] for i in range(90))
    tables[1] = str(tmp_path / "plain.csv")
    scores = tmp_path / "scores.csv"
    assert main(["detect", "--model", "fingerprint", *tables, "--support-normal", ",".join(ids[:10]),
                 "--contamination", "0.2", "--out", str(scores)]) == 0
    header, rows = _read_csv(scores)
    assert header == ["node", "score", "flag", "support"] and [r[0] for r in rows] == ids
    assert sum(int(r[2]) for r in rows) == 18 and [int(r[3]) for r in rows[:10]] == [1] * 10


def test_detect_on_an_unlabelled_file_writes_scores_and_no_metric(tmp_path, capsys):
    h = hub_anomaly_graph(n=200, seed=1)
    anomalies = (h.y == 1).nonzero().flatten()[:5].tolist()
    del h.y
    path = save_gad_npz(h, tmp_path / "mine.npz")
    out = tmp_path / "s.pt"
    assert main(["detect", "--model", "refi-gad", "--dataset", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "zero-shot" in printed and "AUROC" not in printed and torch.load(out, weights_only=True)["score"].shape == (200,)
    assert main(["detect", "--model", "fingerprint:degree", "--dataset", str(path)]) == 2
    assert "--support-normal" in capsys.readouterr().err
    assert main(["detect", "--model", "refi-gad", "--dataset", str(path), "--support-normal", "0,1,2,3,4,5",
                 "--support-anomaly", ",".join(map(str, anomalies)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "AUROC" not in printed and "flagged" in printed
    res = torch.load(out, weights_only=True)
    assert res["score"].shape == (200,) and int(res["flag"].sum()) == 20 and int((res["support"] == 2).sum()) == 5


def test_bad_out_extension_is_refused_before_any_work(tmp_path, capsys):
    g = _nc_graph()
    path = save_nc_file(g, tmp_path / "mine.pt")
    assert main(["predict", "--dataset", str(path), "--out", str(tmp_path / "pred.xlsx")]) == 2
    assert "extension" in capsys.readouterr().err and not (tmp_path / "pred.xlsx").exists()

