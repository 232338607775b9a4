import numpy as np
import pytest
import torch

from course_utils.device import get_device, seed_everything


def test_get_device_picks_cpu_when_no_accelerator(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("course_utils.device._mps_available", lambda: False)
    assert get_device() == torch.device("cpu")


def test_get_device_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert get_device().type == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("course_utils.device._mps_available", lambda: True)
    assert get_device().type == "mps"


def test_environment_variable_forces_the_device(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert get_device() == torch.device("cpu")


def test_unavailable_device_is_an_error_not_a_silent_fallback(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("course_utils.device._mps_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        get_device("cuda")
    with pytest.raises(RuntimeError, match="MPS is not available"):
        get_device("mps")


def test_unknown_device_names_the_choices():
    with pytest.raises(ValueError, match="expected one of cuda, mps, cpu"):
        get_device("tpu")
    with pytest.raises(TypeError, match="string"):
        get_device(0)  # type: ignore[arg-type]


def test_seed_everything_repeats_numpy_and_torch():
    seed_everything(123)
    first = (np.random.rand(3), torch.rand(3))
    seed_everything(123)
    second = (np.random.rand(3), torch.rand(3))
    np.testing.assert_array_equal(first[0], second[0])
    assert torch.equal(first[1], second[1])


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, True, "1"])
def test_seed_everything_rejects_bad_seeds(bad):
    with pytest.raises((TypeError, ValueError)):
        seed_everything(bad)


def test_run_size_knob(monkeypatch):
    from course_utils.device import run_size

    monkeypatch.delenv("COURSE_RUN", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert run_size() == "small"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert run_size() == "large"
    monkeypatch.setenv("COURSE_RUN", "small")
    assert run_size() == "small"
    monkeypatch.setenv("COURSE_RUN", "huge")
    with pytest.raises(ValueError, match="small, large"):
        run_size()
