"""The result cache and the worker pool every chapter that trains uses (course_utils.runs)."""

from __future__ import annotations

import math
import operator
import os

import pytest
import torch

from course_utils import runs
from course_utils.device import get_device
from course_utils.runs import cached


def test_results_are_kept_by_recipe(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"state": {"w": torch.arange(3.0)}, "losses": [1.5, 0.5], "seconds": 2.0}

    first, hit = cached("unit", ("recipe", 1), compute)
    again, hit_again = cached("unit", ("recipe", 1), compute)
    assert not hit and hit_again and len(calls) == 1
    assert torch.equal(again["state"]["w"], first["state"]["w"]) and again["losses"] == [1.5, 0.5]
    cached("unit", ("recipe", 2), compute)  # another recipe trains again
    assert len(calls) == 2
    monkeypatch.setenv("COURSE_CACHE", "off")
    assert cached("unit", ("recipe", 1), compute)[1] is False and len(calls) == 3
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("COURSE_CACHE", str(blocked))
    with pytest.warns(UserWarning, match="could not keep the result"):
        assert cached("unit", ("recipe", 1), compute)[0]["seconds"] == 2.0


def test_a_key_names_the_kind_and_changes_with_the_recipe_and_the_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    path = runs.cache_path("bert-pretrain", ("recipe", 1))
    assert path.parent == tmp_path and path.name.startswith("bert-pretrain-")
    assert runs.recipe_key("a", 1) == runs.recipe_key("a", 1) != runs.recipe_key("a", 2)
    assert runs.recipe_key("a", 1) != runs.recipe_key("b", 1)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1 if before != 1 else 2)
        assert runs.recipe_key("a", 1) != _key_with_threads(before)
    finally:
        torch.set_num_threads(before)
    monkeypatch.setenv("COURSE_CACHE", "off")
    assert runs.cache_path("a", 1) is None and runs.background_workers() == 0
    runs.save_result(None, {"x": 1})  # the cache off: nothing kept, nothing raised
    assert runs.load_result(None) is None


def _key_with_threads(threads: int) -> str:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return runs.recipe_key("a", 1)
    finally:
        torch.set_num_threads(before)


def test_a_result_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    path = runs.cache_path("unit", 1)
    runs.save_result(path, {"w": torch.ones(2)})
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left
    assert torch.equal(runs.load_result(path)["w"], torch.ones(2))


def test_work_announced_in_the_background_is_waited_for_once():
    waited = []
    runs.will_produce(("unit", 1), lambda: waited.append(1))
    runs.wait_for(("unit", 1))
    runs.wait_for(("unit", 1))  # already waited for: nothing more
    assert runs.wait_for(("unit", 2)) is None  # never announced: nothing
    runs.will_produce(("unit", 3), lambda: "made")
    assert runs.pending(("unit", 3)) and runs.wait_for(("unit", 3)) == "made"
    assert not runs.pending(("unit", 3))
    assert waited == [1]


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_a_pool_needs_a_positive_number_of_workers(workers):
    with pytest.raises(ValueError, match="workers must be an int >= 1"):
        runs.worker_pool(workers)


def test_the_pool_runs_jobs_in_fresh_processes():
    import os

    with runs.worker_pool(1) as pool:
        assert pool.submit(os.getpid).result(timeout=120) != os.getpid()


def test_jobs_run_single_threaded_in_workers_or_here(monkeypatch):
    jobs = [(torch.get_num_threads, ()), (operator.mul, (6, 7)), (math.factorial, (5,))]
    background = runs.Jobs(jobs)
    assert background.in_background == ((os.cpu_count() or 1) >= 2)
    assert background.results([2, 1], "two") == [120, 42]
    assert background.results([0, 2]) == [1, 120]  # a worker runs torch on one thread
    assert not background.in_background  # every result is in: the workers are gone
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    before = torch.get_num_threads()
    here = runs.Jobs(jobs)
    assert not here.in_background
    assert here.results([0, 1]) == [1, 42] and torch.get_num_threads() == before
    with pytest.raises(IndexError, match="job index 3 is outside 0 … 2"):
        here.results([3])


def _niceness() -> int:
    return os.nice(0)


def test_jobs_on_more_threads_in_one_worker_at_a_lower_priority(monkeypatch):
    """10장's background classifier: one worker, the chapter's thread count, niced, even for one
    job; the same results when the jobs run here."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    jobs = [(torch.get_num_threads, ()), (_niceness, ())]
    one = runs.Jobs(jobs, workers=1, threads=2, nice=5)
    spare = get_device().type == "cpu"  # two cores here; none are spared on a GPU
    assert one.in_background == spare
    # each job of the worker at 5 steps below this process (not 5 more per job)
    niceness = min(os.nice(0) + 5, 19) if one.in_background else os.nice(0)
    assert one.results([0, 1]) == [2, niceness]
    assert runs.Jobs(jobs * 2, workers=1, nice=5).results([1, 3]) == [niceness, niceness]
    alone = runs.Jobs(jobs[:1], threads=2, least=1)
    assert alone.in_background == spare
    assert alone.results([0]) == [2]
    assert not runs.Jobs(jobs[:1]).in_background  # by default one job runs here
    before = torch.get_num_threads()
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert runs.Jobs(jobs, threads=2).results([0]) == [2] and torch.get_num_threads() == before
    for bad in [{"threads": 0}, {"workers": 0}, {"least": 0}]:
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be an int >= 1"):
            runs.Jobs(jobs, **bad)


def test_chapter_8_runs_refuse_bad_settings():
    from course_utils.experiments.ch08_lstm_gru import start_chapter_runs

    with pytest.raises(ValueError, match="cells must be a non-empty list"):
        start_chapter_runs("lstm", [10])
    with pytest.raises(ValueError, match="each length must be an int >= 2, got 1"):
        start_chapter_runs(["lstm"], [1])
    with pytest.raises(TypeError, match="config must be a CharLMConfig"):
        start_chapter_runs(["lstm"], [10], config={"epochs": 1})
