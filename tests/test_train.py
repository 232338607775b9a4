import math

import pytest
import torch

from course_utils.train import History, NonFiniteLossError, clip_grad_norm, evaluate, fit


def _regression_data(n: int = 256):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, generator=generator)
    y = x @ torch.tensor([[2.0], [-1.0], [0.5]]) + 0.3
    return [(x[i : i + 32], y[i : i + 32]) for i in range(0, n, 32)]


def _mse(model, batch):
    x, y = batch
    device = next(model.parameters()).device
    return torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))


@pytest.mark.parametrize("max_norm", [0.01, 0.5, 100.0])
def test_clip_grad_norm_equals_torch(max_norm):
    torch.manual_seed(0)
    ours, theirs = torch.nn.GRU(4, 5), torch.nn.GRU(4, 5)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(7, 2, 4)
    for model in (ours, theirs):
        model(x)[0].pow(3).sum().backward()
    our_norm = clip_grad_norm(ours.parameters(), max_norm)
    their_norm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm)
    assert our_norm == pytest.approx(float(their_norm), rel=1e-6)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-6, atol=1e-7)


def test_fit_learns_a_linear_map_and_records_history():
    model = torch.nn.Linear(3, 1)
    data = _regression_data()
    history = fit(model, lambda: data, _mse, torch.optim.SGD(model.parameters(), lr=0.1), epochs=20,
                  clip_norm=10.0, val_batches=lambda: data[:2], device="cpu", show_progress=False)  # fmt: skip
    assert isinstance(history, History)
    assert len(history.train_loss) == len(history.val_loss) == len(history.grad_norm) == 20
    assert history.train_loss[-1] < 1e-3 < history.train_loss[0]
    torch.testing.assert_close(
        model.weight.detach(), torch.tensor([[2.0, -1.0, 0.5]]), atol=1e-2, rtol=0
    )


def test_fit_is_seeded():
    results = []
    for _ in range(2):
        model = torch.nn.Linear(3, 1)  # initialised before fit seeds: re-seed here
        torch.manual_seed(1)
        model.reset_parameters()
        data = _regression_data()
        fit(model, lambda data=data: data, _mse, torch.optim.SGD(model.parameters(), lr=0.05), epochs=2,
            device="cpu", show_progress=False)  # fmt: skip
        results.append(model.weight.detach().clone())
    torch.testing.assert_close(results[0], results[1], rtol=0, atol=0)


def test_a_diverging_loss_is_an_error_not_a_nan_curve():
    model = torch.nn.Linear(3, 1)
    data = _regression_data()
    with pytest.raises(NonFiniteLossError, match=r"epoch \d+, step \d+"):
        fit(model, lambda: data, _mse, torch.optim.SGD(model.parameters(), lr=1e6), epochs=5,
            device="cpu", show_progress=False)  # fmt: skip


def test_evaluate_and_bad_input():
    model = torch.nn.Linear(3, 1)
    data = _regression_data()
    assert math.isfinite(evaluate(model, data, _mse))
    with pytest.raises(ValueError, match="no batches"):
        evaluate(model, [], _mse)
    with pytest.raises(ValueError, match="epochs"):
        fit(model, lambda: data, _mse, torch.optim.SGD(model.parameters(), lr=0.1), epochs=0)
    with pytest.raises(ValueError, match="yielded no batches"):
        fit(model, lambda: [], _mse, torch.optim.SGD(model.parameters(), lr=0.1), epochs=1,
            device="cpu", show_progress=False)  # fmt: skip
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm(model.parameters(), 0)
    assert clip_grad_norm(torch.nn.Linear(2, 2).parameters(), 1.0) == 0.0


def test_one_warmup_schedule_gives_the_transformers_and_berts_learning_rates():
    from course_utils.train import warmup_schedule

    def rates(schedule, steps):
        out = []
        for _ in range(steps):
            out.append(schedule.get_last_lr()[0])
            schedule.optimizer.step()
            schedule.step()
        return out

    def optimizer():
        return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2.0)

    warmup = 4
    # 11장: linear warm-up, then constant: min(1, (step + 1) / warmup)
    assert rates(warmup_schedule(optimizer(), warmup), 8) == [
        2.0 * min(1.0, (step + 1) / warmup) for step in range(8)
    ]
    # BERT: linear warm-up, then linear decay to 0 at `total`
    total = 10
    expected = [
        2.0
        * ((step + 1) / warmup if step < warmup else max(0.0, (total - step) / (total - warmup)))
        for step in range(12)
    ]
    assert rates(warmup_schedule(optimizer(), warmup, total), 12) == expected


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.6])
def test_smoothed_cross_entropy_equals_torchs_label_smoothing(epsilon):
    from course_utils.train import smoothed_cross_entropy

    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(40, 9, dtype=torch.float64, generator=generator, requires_grad=True)
    targets = torch.randint(0, 9, (40,), generator=generator)
    targets[::7] = 0  # ignored like <pad>
    ours = smoothed_cross_entropy(logits, targets, epsilon, ignore_index=0)
    theirs = torch.nn.functional.cross_entropy(
        logits, targets, ignore_index=0, label_smoothing=epsilon
    )
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    (g_ours,) = torch.autograd.grad(ours, logits)
    (g_theirs,) = torch.autograd.grad(theirs, logits)
    torch.testing.assert_close(g_ours, g_theirs, rtol=1e-12, atol=1e-12)


def test_smoothed_cross_entropy_refuses_bad_input():
    from course_utils.train import smoothed_cross_entropy

    logits, targets = torch.zeros(3, 4), torch.tensor([0, 1, 2])
    for epsilon in (-0.1, 1.0, "0.1", True):
        with pytest.raises(ValueError, match=r"epsilon must be a number in \[0, 1\)"):
            smoothed_cross_entropy(logits, targets, epsilon)
    with pytest.raises(ValueError, match="logits"):
        smoothed_cross_entropy(torch.zeros(3), targets, 0.1)
    with pytest.raises(TypeError, match="targets"):
        smoothed_cross_entropy(logits, targets.float(), 0.1)
    with pytest.raises(ValueError, match="every target is ignore_index"):
        smoothed_cross_entropy(logits, torch.tensor([5, 5, 5]), 0.1, ignore_index=5)
    with pytest.raises(ValueError, match=r"ids in 0 … 3"):
        smoothed_cross_entropy(logits, torch.tensor([0, 4, 1]), 0.1)


def test_the_transformer_schedule_is_the_papers_formula_as_a_lambdalr():
    from course_utils.train import inverse_sqrt_schedule, transformer_rate

    d_model, warmup = 512, 4000
    # the paper's rate at its peak: 512^−0.5 · 4000^−0.5 ≈ 7.0e-4 (computed independently)
    assert transformer_rate(warmup, d_model, warmup) == pytest.approx(1 / math.sqrt(512 * 4000))
    assert transformer_rate(1, d_model, warmup) == pytest.approx(1 / (math.sqrt(512) * 4000**1.5))
    assert transformer_rate(16_000, d_model, warmup) == pytest.approx(1 / math.sqrt(512 * 16_000))
    peak = transformer_rate(warmup, d_model, warmup)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    schedule = inverse_sqrt_schedule(optimizer, warmup)
    for step in range(1, 12_001):  # the rate used by the step-th optimizer step
        assert schedule.get_last_lr()[0] == pytest.approx(
            transformer_rate(step, d_model, warmup), rel=1e-12
        )
        optimizer.step()
        schedule.step()
    with pytest.raises(ValueError, match="warmup"):
        inverse_sqrt_schedule(optimizer, 0)
    with pytest.raises(ValueError, match="step"):
        transformer_rate(0, d_model, warmup)
