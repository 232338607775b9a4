import pytest
import torch

from course_utils.sequences import adding_problem, echo_task, lm_windows


def test_lm_windows_are_shifted_by_one_and_cover_the_text_once():
    ids = torch.arange(1000)
    batches = lm_windows(ids, 4, 10, torch.Generator().manual_seed(0))
    starts = []
    for x, y in batches:
        assert x.shape == y.shape == (4, 10)
        assert torch.equal(y, x + 1)  # ids are positions, so the next token is +1
        assert torch.equal(x[:, 1:] - x[:, :-1], torch.ones(4, 9, dtype=torch.long))
        starts += x[:, 0].tolist()
    assert len(set(starts)) == len(starts)  # no window twice
    assert len(starts) >= (1000 - 10) // 10 - 4


def test_adding_problem_target_is_the_sum_of_the_marked_values():
    x, y = adding_problem(50, 20, torch.Generator().manual_seed(0))
    assert x.shape == (50, 20, 2) and y.shape == (50,)
    assert torch.all(x[..., 1].sum(1) == 2)
    assert torch.all(x[:, :10, 1].sum(1) == 1)  # one marker in each half
    torch.testing.assert_close(y, (x[..., 0] * x[..., 1]).sum(1))


def test_echo_task_targets_repeat_the_input_after_the_delay():
    x, y = echo_task(3, 12, 4, vocab_size=5, generator=torch.Generator().manual_seed(0))
    assert torch.all(y[:, :4] == -100)
    assert torch.equal(y[:, 4:], x[:, :-4])
    assert int(x.max()) < 5


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="too short"):
        lm_windows(torch.arange(30), 8, 10)
    with pytest.raises(ValueError, match="1-D tensor"):
        lm_windows(torch.zeros(3, 3), 1, 1)
    with pytest.raises(ValueError, match="num_steps must be an int >= 1"):
        lm_windows(torch.arange(30), 1, 0)
    with pytest.raises(ValueError, match="length must be >= 2"):
        adding_problem(3, 1)
    with pytest.raises(ValueError, match="delay must be smaller"):
        echo_task(3, 5, 5)
    with pytest.raises(ValueError, match="vocab_size must be >= 2"):
        echo_task(3, 5, 2, vocab_size=1)
