"""The shared argument checks: what they accept, what they refuse, and the names in the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.checks import (
    check_attention_mask,
    check_int,
    check_same_shape,
    check_tensor,
    check_token_ids,
)


def test_check_int_accepts_python_and_numpy_integers_and_returns_an_int():
    assert check_int(3, "n") == 3
    value = check_int(np.int64(4), "n")
    assert value == 4 and type(value) is int
    assert check_int(0, "offset", least=0) == 0


@pytest.mark.parametrize("value", [True, 2.0, "3", None, 0, -1, torch.tensor(3)])
def test_check_int_refuses_everything_else_naming_the_argument(value):
    with pytest.raises(ValueError, match=r"^steps must be an int >= 1, got "):
        check_int(value, "steps")


def test_check_int_gives_the_reason_for_its_bound():
    with pytest.raises(ValueError, match=r"^n must be an int >= 4 \(four specials\), got 0$"):
        check_int(0, "n", 4, "four specials")


def test_check_tensor_returns_the_shape_and_names_the_argument_and_its_axes():
    assert check_tensor(torch.ones(2, 3, 8), "tgt", "B, T, d_model", d_model=8) == (2, 3, 8)
    assert check_tensor(torch.ones(4, dtype=torch.long), "tokens", "B", "int64", B=4) == (4,)
    assert check_tensor(torch.ones(1, 2, dtype=torch.int32), "x", "B, T", "any") == (1, 2)
    want = r"tgt must be a \(B, T, d_model\) float tensor with d_model = 8, got "
    with pytest.raises(TypeError, match=want + "list"):
        check_tensor([[[1.0] * 8]], "tgt", "B, T, d_model", d_model=8)
    with pytest.raises(TypeError, match=want + "NoneType"):
        check_tensor(None, "tgt", "B, T, d_model", d_model=8)
    with pytest.raises(ValueError, match=want + r"\(2, 3, 6\)"):
        check_tensor(torch.ones(2, 3, 6), "tgt", "B, T, d_model", d_model=8)
    with pytest.raises(ValueError, match=want + r"\(3, 8\)"):
        check_tensor(torch.ones(3, 8), "tgt", "B, T, d_model", d_model=8)
    with pytest.raises(TypeError, match=want + r"torch\.int64"):
        check_tensor(torch.ones(2, 3, 8, dtype=torch.long), "tgt", "B, T, d_model", d_model=8)
    with pytest.raises(TypeError, match=r"\(B\) int64 tensor with B = 2, got torch\.float32"):
        check_tensor(torch.ones(2), "tokens", "B", "int64", B=2)
    with pytest.raises(ValueError, match=r"with B = 2, T = 3, got \(2, 4\)"):
        check_tensor(torch.ones(2, 4), "target_out", "B, T", B=2, T=3)


def test_check_token_ids():
    assert check_token_ids(torch.tensor([[1, 2, 3]]), "ids", 4) == (1, 3)
    with pytest.raises(TypeError, match="ids must be an int64"):
        check_token_ids(torch.tensor([[1, 2]], dtype=torch.int32), "ids", 4)
    with pytest.raises(TypeError, match="got list"):
        check_token_ids([[1, 2]], "ids", 4)
    with pytest.raises(ValueError, match=r"\(B, T\) with T >= 1, got \(1, 0\)"):
        check_token_ids(torch.zeros(1, 0, dtype=torch.long), "ids", 4)
    with pytest.raises(ValueError, match="unknown token id 4 in ids: ids must be in 0 … 3"):
        check_token_ids(torch.tensor([[1, 4]]), "ids", 4)
    with pytest.raises(ValueError, match="unknown token id -1"):
        check_token_ids(torch.tensor([[-1, 2]]), "ids", 4)


def test_check_same_shape_and_attention_mask():
    check_same_shape(torch.ones(2, 3, dtype=torch.long), "token_type_ids", (2, 3), "input_ids")
    with pytest.raises(
        ValueError, match=r"token_type_ids must be \(B, T\) = \(2, 3\) like input_ids"
    ):
        check_same_shape(torch.ones(2, 4, dtype=torch.long), "token_type_ids", (2, 3), "input_ids")
    with pytest.raises(TypeError, match=r"integer or bool tensor, got torch\.float32"):
        check_same_shape(torch.ones(2, 3), "token_type_ids", (2, 3), "input_ids")
    check_attention_mask(torch.tensor([[1, 1, 0], [1, 0, 0]]), (2, 3))
    with pytest.raises(ValueError, match=r"1 \(a real token\) or 0 \(padding\) only"):
        check_attention_mask(torch.tensor([[1, 2, 0]]), (1, 3))
    with pytest.raises(ValueError, match="a row with no real token"):
        check_attention_mask(torch.tensor([[1, 1], [0, 0]]), (2, 2))
