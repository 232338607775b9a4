"""13장's decoder-only model (course_utils.gpt) against transformers' GPT2LMHeadModel: the
same logits and the same gradients with copied weights, in float64 (the minGPT test,
offline, on a random small configuration)."""

from __future__ import annotations

import pytest
import torch

from course_utils.gpt import GPT, GPTConfig, gpt2_config, load_gpt2_weights

transformers = pytest.importorskip("transformers")


def _pair(config: GPTConfig, seed: int = 0):
    torch.manual_seed(seed)
    theirs = transformers.GPT2LMHeadModel(gpt2_config(config)).double().eval()
    ours = GPT(config).double().eval()
    load_gpt2_weights(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu"])
def test_logits_equal_gpt2s_with_copied_weights(activation):
    config = GPTConfig(vocab_size=50, max_len=16, d_model=24, nhead=3, num_layers=3,
                       activation=activation)  # fmt: skip
    ours, theirs = _pair(config)
    ids = torch.randint(0, 50, (4, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = theirs(ids).logits
        got = ours(ids)
    assert got.shape == (4, 11, 50)
    assert torch.allclose(got, expected, atol=1e-10, rtol=0)
    # the same parameters: tied output layer, GPT-2's count
    assert ours.lm_head.weight is ours.token_embedding.weight
    assert sum(p.numel() for p in ours.parameters()) == theirs.num_parameters()


def test_gradients_equal_gpt2s_for_every_weight():
    config = GPTConfig(vocab_size=40, max_len=12, d_model=16, nhead=2, num_layers=2,
                       dim_feedforward=40)  # fmt: skip
    ours, theirs = _pair(config, seed=3)
    generator = torch.Generator().manual_seed(4)
    ids = torch.randint(0, 40, (3, 9), generator=generator)
    targets = torch.randint(0, 40, (3, 9), generator=generator)
    targets[0, :4] = -100  # positions left out of the loss (a prompt, say)
    our_loss = ours.loss(ids, targets)
    logits = theirs(ids).logits
    their_loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    assert torch.allclose(our_loss, their_loss, atol=1e-12, rtol=0)
    our_loss.backward()
    their_loss.backward()
    grads = {n.removeprefix("transformer."): p.grad for n, p in theirs.named_parameters()}
    pairs = [(ours.token_embedding.weight.grad, grads["wte.weight"]),  # output layer's included
             (ours.position_embedding.weight.grad, grads["wpe.weight"]),
             (ours.norm.weight.grad, grads["ln_f.weight"])]  # fmt: skip
    for i, layer in enumerate(ours.blocks):
        h = f"h.{i}."
        attention = torch.cat(
            [p.weight.grad.T for p in (layer.self_attn.q_proj, layer.self_attn.k_proj,
                                       layer.self_attn.v_proj)], dim=1,
        )  # fmt: skip
        pairs += [
            (attention, grads[h + "attn.c_attn.weight"]),
            (layer.self_attn.out_proj.weight.grad.T, grads[h + "attn.c_proj.weight"]),
            (layer.linear1.weight.grad.T, grads[h + "mlp.c_fc.weight"]),
            (layer.linear2.bias.grad, grads[h + "mlp.c_proj.bias"]),
            (layer.norm1.weight.grad, grads[h + "ln_1.weight"]),
            (layer.norm2.bias.grad, grads[h + "ln_2.bias"]),
        ]
    for got, expected in pairs:
        assert torch.allclose(got, expected, atol=1e-10, rtol=0)


def test_a_position_sees_only_itself_and_the_past():
    config = GPTConfig(vocab_size=30, max_len=10, d_model=16, nhead=4, num_layers=2)
    torch.manual_seed(0)
    model = GPT(config).double().eval()
    ids = torch.randint(0, 30, (2, 8))
    changed = ids.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 30  # a different future
    with torch.no_grad():
        before, after = model(ids), model(changed)
    assert torch.equal(before[:, :5], after[:, :5])
    assert not torch.allclose(before[:, 5:], after[:, 5:])


def test_gpt2s_initialisation_scales_the_residual_projections():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=500, d_model=64, num_layers=8))
    std = model.blocks[0].linear2.weight.std().item()
    assert abs(std - 0.02 / 4) < 0.001  # 0.02 / √(2 · 8)
    assert abs(model.token_embedding.weight.std().item() - 0.02) < 0.002
    assert model.blocks[0].linear1.bias.abs().max().item() == 0.0


def test_bad_configurations_and_inputs_are_named():
    with pytest.raises(ValueError, match="divisible by nhead = 3"):
        GPTConfig(vocab_size=10, d_model=16, nhead=3)
    with pytest.raises(ValueError, match="activation must be one of gelu_tanh, gelu, relu"):
        GPTConfig(vocab_size=10, activation="swish")
    with pytest.raises(ValueError, match="dropout must be in"):
        GPTConfig(vocab_size=10, dropout=1.0)
    model = GPT(GPTConfig(vocab_size=10, max_len=4, d_model=8, nhead=2, num_layers=1))
    with pytest.raises(ValueError, match="0 earlier \\+ T = 5 positions exceed max_len = 4"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="int64"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="targets must be"):
        model.loss(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long))
    other = transformers.GPT2LMHeadModel(
        gpt2_config(GPTConfig(vocab_size=10, max_len=4, d_model=8, nhead=2, num_layers=2))
    )
    with pytest.raises(ValueError, match="more than num_layers = 1"):
        load_gpt2_weights(model, other)
    wider = transformers.GPT2LMHeadModel(
        gpt2_config(GPTConfig(vocab_size=12, max_len=4, d_model=8, nhead=2, num_layers=1))
    )
    with pytest.raises(ValueError, match=r"wte.weight must be \(10, 8\)"):
        load_gpt2_weights(model, wider)


def test_the_key_value_cache_gives_the_logits_of_reading_everything_again():
    from course_utils.sampling import Sampling, generate

    config = GPTConfig(vocab_size=30, max_len=24, d_model=16, nhead=4, num_layers=3)
    torch.manual_seed(0)
    model = GPT(config).double().eval()
    ids = torch.randint(0, 30, (2, 14), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        whole = model(ids)
        prompt_logits, cache = model.forward_cached(ids[:, :6])  # a prompt, then one at a time
        steps = [prompt_logits]
        for t in range(6, 14):
            logits, cache = model.forward_cached(ids[:, t : t + 1], cache)
            steps.append(logits)
    assert torch.allclose(torch.cat(steps, dim=1), whole, atol=1e-12, rtol=0)
    assert len(cache) == 3 and cache[0][0].shape == (2, 4, 14, 4)  # (B, h, t, d_k)
    prompt = ids[:, :4]
    for sampling in (Sampling(greedy=True), Sampling(temperature=0.8, top_k=10)):
        again = generate(model, prompt, 12, sampling, torch.Generator().manual_seed(7))
        cached = generate(model, prompt, 12, sampling, torch.Generator().manual_seed(7), True)
        assert torch.equal(cached, again)
    with pytest.raises(ValueError, match="24 earlier \\+ T = 1 positions exceed max_len = 24"):
        model.forward_cached(torch.zeros(2, 1, dtype=torch.long), cache=[
            (torch.zeros(2, 4, 24, 4), torch.zeros(2, 4, 24, 4))] * 3)  # fmt: skip
    with pytest.raises(ValueError, match="cache must hold 3 layers"):
        model.forward_cached(torch.zeros(2, 1, dtype=torch.long), cache=cache[:2])
    with pytest.raises(TypeError, match="use_cache needs a model with forward_cached"):
        generate(torch.nn.Identity(), prompt, 2, use_cache=True)


def test_fine_tuning_loss_is_the_mean_over_response_tokens_only():
    from course_utils.gpt import completion_targets

    config = GPTConfig(vocab_size=20, max_len=12, d_model=16, nhead=2, num_layers=1)
    torch.manual_seed(0)
    model = GPT(config).double()
    ids = torch.randint(1, 20, (3, 9), generator=torch.Generator().manual_seed(6))
    ids[2, 7:] = 0  # padding at the end of the third example
    prompt_lengths = torch.tensor([3, 5, 2])
    inputs, targets = completion_targets(ids, prompt_lengths, pad_id=0)
    loss = model.loss(inputs, targets)
    log_probs = model(ids[:, :-1]).log_softmax(-1)
    by_hand = []  # -log p of each response token, counted one by one
    for b in range(3):
        for t in range(int(prompt_lengths[b]), 9):  # the response's tokens
            if ids[b, t] != 0:
                by_hand.append(-log_probs[b, t - 1, ids[b, t]])
    assert len(by_hand) == 6 + 4 + 5
    assert torch.allclose(loss, torch.stack(by_hand).mean(), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="each prompt length must be in 1"):
        completion_targets(ids, torch.tensor([3, 9, 2]))
    with pytest.raises(ValueError, match="prompt_lengths must be"):
        completion_targets(ids, torch.tensor([3, 5]))
