"""Fig. 7: the CNN family against a hand count, the CIFAR-10 binary parser on a file written here, the folder checks."""

import numpy as np
import pytest
import torch
import yaml

import depthlab.config as dlc
from depthlab.studies.fractals import cnn_nets, image_sets


def test_cnn_shape_and_parameter_count_by_hand():
    # depth 2, width 4, 3x3 kernels on 1 x 8 x 8: conv1 (1*9 + 1)*4 = 40, conv2 (4*9 + 1)*4 = 148,
    # two 2x2 pools leave 2 x 2, readout (4*2*2 + 1)*10 = 170: 358 in all
    net = cnn_nets.build(2, 4, 3, 1, 8, seed=0)
    assert cnn_nets.count_params(2, 4, 3, 1, 8) == 358 == sum(p.numel() for p in net.parameters())
    assert net(torch.zeros(5, 1, 8, 8)).shape == (5, 10)
    # depth 4, width 6, 5x5 on 3 x 32 x 32: only the first two layers pool (32 -> 16 -> 8)
    net = cnn_nets.build(4, 6, 5, 3, 32, seed=1)
    conv = (3 * 25 + 1) * 6 + 3 * (6 * 25 + 1) * 6
    assert (
        cnn_nets.count_params(4, 6, 5, 3, 32) == conv + (6 * 8 * 8 + 1) * 10 == sum(p.numel() for p in net.parameters())
    )
    pools = [m for m in net if isinstance(m, torch.nn.MaxPool2d)]
    assert len(pools) == 2 and net(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert torch.equal(cnn_nets.build(2, 4, 3, 1, 8, seed=0)[0].weight, cnn_nets.build(2, 4, 3, 1, 8, seed=0)[0].weight)


def _cifar_records(labels, seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8)
    return np.concatenate([np.asarray(labels, dtype=np.uint8)[:, None], pixels], axis=1), pixels


def _cifar_folder(tmp_path, n=3):
    folder = tmp_path / "cifar"
    folder.mkdir()
    for i, name in enumerate((*image_sets.CIFAR_TRAIN, image_sets.CIFAR_TEST)):
        rec, _ = _cifar_records(np.arange(n) + i % 7, seed=i)
        (folder / name).write_bytes(rec.tobytes())
    return folder


def test_the_cifar_parser_reads_the_known_bytes(tmp_path):
    rec, pixels = _cifar_records([7, 0])
    rec[1, 1 + 1024 + 32 * 5 + 3] = 200  # image 1, green plane, row 5, column 3
    p = tmp_path / "b.bin"
    p.write_bytes(rec.tobytes())
    x, y = image_sets.read_cifar_file(p)
    assert x.shape == (2, 3, 32, 32) and x.dtype == np.uint8 and y.tolist() == [7, 0]
    assert x[1, 1, 5, 3] == 200
    np.testing.assert_array_equal(x[0, 2].ravel(), pixels[0, 2048:])  # blue plane: the last 1024 bytes
    folder = _cifar_folder(tmp_path)
    xtr, ytr, xte, yte = image_sets.read_cifar(folder)
    assert xtr.shape == (15, 3, 32, 32) and xte.shape == (3, 3, 32, 32) and yte.tolist() == [5, 6, 7]


@pytest.mark.parametrize(
    "damage,needle",
    [
        (lambda f: (f / "test_batch.bin").unlink(), "test_batch.bin is missing"),
        (lambda f: (f / "data_batch_2.bin").write_bytes(b"\x00" * 100), "not a whole number of 3073-byte records"),
        (lambda f: (f / "data_batch_1.bin").write_bytes(bytes([42]) + b"\x00" * 3072), "a label byte is 42"),
    ],
)
def test_a_broken_cifar_folder_is_a_config_error_before_any_job(tmp_path, damage, needle):
    folder = _cifar_folder(tmp_path)
    damage(folder)
    from pathlib import Path

    cfg = yaml.safe_load((Path(__file__).resolve().parents[3] / "config" / "smoke.yaml").read_text())
    fr = cfg["studies"]["fractals"]
    fr["fig7"].update(dataset="cifar10", cifar10_dir=str(folder), n_test=2)
    with pytest.raises(dlc.ConfigError, match=rf"config error at studies.fractals.fig7.cifar10_dir: .*{needle}"):
        dlc.validate(cfg)
    fr["fig7"]["cifar10_dir"] = str(tmp_path / "nowhere")
    with pytest.raises(dlc.ConfigError, match="is not a folder"):
        dlc.validate(cfg)


def test_augmentation_crops_and_flips_and_the_test_set_is_centre_cropped():
    x = torch.arange(2 * 1 * 6 * 6, dtype=torch.float32).reshape(2, 1, 6, 6)
    out = cnn_nets._augment(x, 4, np.random.default_rng(0))
    assert out.shape == (2, 1, 4, 4)
    for b in range(2):  # every crop is a 4 x 4 window of its image, flipped or not
        windows = [x[b, :, i : i + 4, j : j + 4] for i in range(3) for j in range(3)]
        assert any(torch.equal(out[b], w) or torch.equal(out[b], w.flip(-1)) for w in windows)
    torch.testing.assert_close(cnn_nets.centre(x, 4), x[..., 1:5, 1:5])


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_cifar_file_is_an_input_a_change_reruns_and_the_audit_names(tmp_path):
    """The user's CIFAR-10 files were not inputs of any rule, so a changed file reran nothing and the
    audit could not see it.  Now they are inputs of the images rule, their SHA-256 are in the store's record, a changed
    test file reruns the images job (and so Fig. 7 below it), and the audit names the changed file."""
    import subprocess
    import sys

    from helpers import ROOT, smk

    import depthlab.storage as st

    folder = _cifar_folder(tmp_path, n=4)
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg["studies"] = {"fractals": cfg["studies"]["fractals"]}
    cfg["studies"]["fractals"]["fig7"].update(dataset="cifar10", cifar10_dir=str(folder), n_train=0, n_test=0)
    path = tmp_path / "cifar.yaml"
    path.write_text(yaml.safe_dump(cfg))
    store = "results/cifar/fractals/realdata/cifar10/data.zarr"
    smk(tmp_path, "--configfile", str(path), "--", store)
    rec = st.read_record(tmp_path / store)
    assert sorted(rec["files"]) == sorted((*image_sets.CIFAR_TRAIN, image_sets.CIFAR_TEST))
    assert rec["files"]["test_batch.bin"]["path"] == str(folder / "test_batch.bin")
    dry = smk(tmp_path, "--configfile", str(path), "--dry-run", "--", store)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    # one pixel of the test file changes
    raw = bytearray((folder / "test_batch.bin").read_bytes())
    raw[100] ^= 0xFF
    (folder / "test_batch.bin").write_bytes(bytes(raw))
    dry = smk(tmp_path, "--configfile", str(path), "--dry-run", "--", store)
    assert "fractals_images" in dry.stdout + dry.stderr and "Nothing to be done" not in dry.stdout + dry.stderr
    audit = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(tmp_path / store)], capture_output=True, text=True
    )
    assert (
        audit.returncode == 1
        and f"its source file {folder / 'test_batch.bin'} has changed" in audit.stdout + audit.stderr
    )
    # a moved copy is a note, a failure only under --strict
    folder.rename(tmp_path / "moved")
    audit = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(tmp_path / store)], capture_output=True, text=True
    )
    assert audit.returncode == 0 and "is not there" in audit.stdout + audit.stderr, audit.stdout[-2000:]
    strict = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(tmp_path / store), "--strict"], capture_output=True, text=True
    )
    assert strict.returncode == 1
