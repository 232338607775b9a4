"""13장's LoRA (course_utils.lora) against peft's on the same GPT with A and B copied: the
same outputs and gradients, the same trainable parameters; merging keeps the outputs."""

from __future__ import annotations

import copy

import pytest
import torch

from course_utils.gpt import GPT, GPTConfig
from course_utils.lora import LoRALinear, add_lora, lora_layers, trainable_share

peft = pytest.importorskip("peft")

CONFIG = GPTConfig(vocab_size=40, max_len=16, d_model=32, nhead=4, num_layers=2)


def _models(r: int = 4, alpha: float = 8.0):
    torch.manual_seed(0)
    base = GPT(CONFIG).double()
    theirs = peft.get_peft_model(
        copy.deepcopy(base),
        peft.LoraConfig(r=r, lora_alpha=alpha, target_modules=["q_proj", "v_proj"],
                        lora_dropout=0.0),
    )  # fmt: skip
    ours = copy.deepcopy(base)
    names = add_lora(ours, ("q_proj", "v_proj"), r=r, alpha=alpha)
    torch.manual_seed(1)
    with torch.no_grad():
        for name in names:
            layer = ours.get_submodule(name)
            assert isinstance(layer, LoRALinear)
            theirs_layer = theirs.base_model.model.get_submodule(name)
            theirs_layer.lora_B["default"].weight.normal_()  # B starts at 0: make it count
            layer.lora_A.copy_(theirs_layer.lora_A["default"].weight)
            layer.lora_B.copy_(theirs_layer.lora_B["default"].weight)
    return ours, theirs, names


def test_outputs_gradients_and_trainable_parameters_equal_peft():
    ours, theirs, names = _models()
    assert names == [f"layers.{i}.self_attn.{p}" for i in range(2) for p in ("q_proj", "v_proj")]
    ids = torch.randint(0, 40, (3, 10), generator=torch.Generator().manual_seed(2))
    targets = torch.randint(0, 40, (3, 10), generator=torch.Generator().manual_seed(3))
    our_logits, their_logits = ours(ids), theirs(ids)
    assert torch.allclose(our_logits, their_logits, atol=1e-12, rtol=0)
    for logits in (our_logits, their_logits):
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
    for name in names:
        layer, theirs_layer = ours.get_submodule(name), theirs.base_model.model.get_submodule(name)
        assert torch.allclose(layer.lora_A.grad, theirs_layer.lora_A["default"].weight.grad,
                              atol=1e-12, rtol=0)  # fmt: skip
        assert torch.allclose(layer.lora_B.grad, theirs_layer.lora_B["default"].weight.grad,
                              atol=1e-12, rtol=0)  # fmt: skip
        assert layer.base.weight.grad is None  # frozen
    trainable, total = trainable_share(ours)
    assert (trainable, total) == theirs.get_nb_trainable_parameters()
    assert trainable == 2 * 2 * 4 * (32 + 32)  # 2 layers × q, v × r (in + out)


def test_a_fresh_lora_layer_changes_nothing_and_merging_keeps_the_outputs():
    torch.manual_seed(0)
    base = torch.nn.Linear(12, 6).double()
    layer = LoRALinear(copy.deepcopy(base), r=3, alpha=6.0)
    x = torch.randn(5, 12, dtype=torch.float64)
    assert torch.equal(layer(x), base(x))  # B = 0 at the start
    with torch.no_grad():
        layer.lora_B.normal_()
    before = layer(x)
    layer.merge()
    assert layer.merged and torch.allclose(layer(x), before, atol=1e-12, rtol=0)
    assert not torch.allclose(layer(x), base(x))


def test_bad_settings_are_named():
    with pytest.raises(TypeError, match=r"base must be an nn\.Linear"):
        LoRALinear(torch.nn.Conv1d(3, 3, 1))
    with pytest.raises(ValueError, match="r = 9 must be at most min"):
        LoRALinear(torch.nn.Linear(8, 16), r=9)
    with pytest.raises(ValueError, match=r"no nn\.Linear of the model is named k_proj_x"):
        add_lora(GPT(CONFIG), ("k_proj_x",))
    with pytest.raises(ValueError, match="targets must be a non-empty tuple"):
        add_lora(GPT(CONFIG), "q_proj")  # type: ignore[arg-type]
    model = GPT(CONFIG)
    add_lora(model, ("linear1",), r=2)
    assert len(lora_layers(model)) == 2
