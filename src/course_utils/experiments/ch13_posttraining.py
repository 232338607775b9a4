"""13장's post-training experiments: SFT, LoRA and DPO on a task with exact answers.

The task is Korean's particle allomorphy: 은/는, 이/가, 을/를, 과/와 and (으)로
each take one form after a final consonant (받침) and the other after a vowel
(사과**를**, 생선**을**; ㄹ takes 로: 연필**로**). 9장's lexicon
(:func:`~course_utils.translation_lexicon.particle`) gives the answer for
every noun, so every grade below is exact. The fine-tuning nouns are those of
two syllables or more that KoNLPy's Okt finds in the pretraining text; the test
nouns are the lexicon's nouns written with the pretraining text's characters only
(the character GPT has no other characters), none of them a fine-tuning noun
(:func:`particle_nouns`). A test noun's final syllable may still end a
fine-tuning noun, and the answer depends on that syllable alone.

- **SFT** (supervised fine-tuning): instruction ``사과+을/를:`` → response
  ``를`` and a line break, the loss on the response tokens only
  (:func:`course_utils.gpt.completion_targets`); graded by greedy decoding.
- **LoRA** against full fine-tuning at the same budget.
- **DPO** (direct preference optimisation, Rafailov et al., 2023) on the
  pretrained model with no instruction at all: after a noun at the start of a
  line, the right particle (chosen) against the other form (rejected); graded
  by the share of pairs whose chosen form the model finds more likely.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F

from course_utils import runs
from course_utils.checks import check_int
from course_utils.experiments.ch13_gpt import (
    SIZE_SWEEP,
    GPTPretrainConfig,
    PretrainedGPT,
    korean_char_text,
    pretrain_char_gpt,
    pretrain_group,
    stream_perplexity,
)
from course_utils.gpt import GPT, completion_targets
from course_utils.lora import add_lora, trainable_share
from course_utils.translation_lexicon import LEXICON, particle
from course_utils.vocab import Vocab

__all__ = [
    "LORA_TARGETS",
    "PARTICLES",
    "PARTS",
    "DPOConfig",
    "DPOResult",
    "ParticleItem",
    "PostTraining",
    "SFTConfig",
    "SFTResult",
    "dpo_loss",
    "dpo_particles",
    "encode_pairs",
    "encode_sft",
    "exact_match",
    "finetune_particles",
    "particle_items",
    "particle_nouns",
    "preference_accuracy",
    "run_posttraining",
    "sequence_logprobs",
    "start_ch13_training",
]

#: The five particles, each as (form after a final consonant, form after a vowel).
PARTICLES: tuple[tuple[str, str], ...] = (
    ("은", "는"),
    ("이", "가"),
    ("을", "를"),
    ("과", "와"),
    ("으로", "로"),
)


@dataclass(frozen=True)
class ParticleItem:
    """One noun with one particle: its instruction, its answer and the wrong form."""

    noun: str
    forms: tuple[str, str]

    @property
    def right(self) -> str:
        """The form this noun takes (9장's lexicon)."""
        return particle(self.noun, self.forms[0])

    @property
    def wrong(self) -> str:
        """The other form."""
        return self.forms[1] if self.right == self.forms[0] else self.forms[0]

    @property
    def prompt(self) -> str:
        """The instruction: ``사과+을/를:``."""
        return f"{self.noun}+{self.forms[0]}/{self.forms[1]}:"

    @property
    def answer(self) -> str:
        """The response: the particle's form, then a line break (the end)."""
        return f"{self.right}\n"


def particle_nouns(vocab: Vocab) -> tuple[list[str], list[str]]:
    """(fine-tuning nouns, held-out nouns), each sorted.

    Fine-tuning: the nouns of two syllables or more that KoNLPy's Okt finds in
    the pretraining text's training lines (법률, 국회, 대통령, …). Held out: 9장's
    lexicon nouns written with ``vocab``'s characters only (사과, 학교, 고양이, …),
    none of them among the fine-tuning nouns.
    """
    key = tuple(vocab.tokens)
    if key not in _NOUNS:  # Okt (a JVM) reads the text once; worker processes read the cache
        saved, _ = runs.cached("particle-nouns", key, lambda: _particle_nouns(vocab))
        _NOUNS[key] = (list(saved["train"]), list(saved["held"]))
    train, held = _NOUNS[key]
    return list(train), list(held)


#: particle_nouns' answer by vocabulary (Okt reads the text once per process).
_NOUNS: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}


def _particle_nouns(vocab: Vocab) -> dict[str, list[str]]:
    from course_utils.datasets import korean_corpus_lines, split_lines
    from course_utils.text import load_analyzer  # starts the JVM with -Xrs (see there)

    held = sorted({n.korean for n in LEXICON.nouns if all(c in vocab for c in n.korean)})
    lines, _ = split_lines(korean_corpus_lines(), 0.2)  # korean_char_split's training lines
    okt = load_analyzer("okt")
    found = {noun for line in lines for noun in okt.nouns(line)}
    train = sorted(n for n in found
                   if len(n) >= 2 and n not in held and all(c in vocab for c in n))  # fmt: skip
    return {"train": train, "held": held}


def particle_items(nouns: Sequence[str]) -> list[ParticleItem]:
    """Every noun with every particle of :data:`PARTICLES`."""
    if isinstance(nouns, str):
        raise TypeError("nouns must be a list of nouns, not one str")
    return [ParticleItem(noun, forms) for noun in nouns for forms in PARTICLES]


def _ids(text: str, vocab: Vocab) -> list[int]:
    unknown = [c for c in text if c not in vocab]
    if unknown:
        raise ValueError(f"{text!r} has characters outside the vocabulary: {unknown}")
    return vocab.encode(list(text))


def _padded(rows: Sequence[list[int]], pad: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (width - len(r)) for r in rows])


def encode_sft(
    items: Sequence[ParticleItem], vocab: Vocab
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs (B, T), targets (B, T) and prompt lengths (B,) of prompt + answer sequences.

    Padded at the end with ``<unk>`` (no prompt or answer holds it); a target
    that is a prompt token or padding is −100, left out of the loss
    (:func:`course_utils.gpt.completion_targets`).
    """
    if not items:
        raise ValueError("items is empty")
    rows = [_ids(item.prompt + item.answer, vocab) for item in items]
    prompts = torch.tensor([len(item.prompt) for item in items])
    inputs, targets = completion_targets(_padded(rows, vocab.unk_id), prompts, vocab.unk_id)
    return inputs, targets, prompts


#: Rows graded per forward pass (exact match, preference): memory stays small, speed the same.
_CHUNK = 512


@torch.no_grad()
def exact_match(model: GPT, items: Sequence[ParticleItem], vocab: Vocab) -> float:
    """The share of items whose greedy answer is exactly right, line break included.

    Greedy decoding produces the answer exactly when, fed the right answer so
    far, the model's most likely next token is the right one at every answer
    position: one teacher-forced forward pass checks that for every item at once
    (``tests/test_ch13.py`` checks it against decoding token by token).
    """
    inputs, targets, _ = encode_sft(items, vocab)
    model.eval()
    guess = torch.cat([model(rows).argmax(dim=-1) for rows in inputs.split(_CHUNK)])  # (B, T)
    scored = targets != -100
    right = (guess == targets) | ~scored
    return float(right.all(dim=1).float().mean())


#: LoRA beside every linear layer of every block: W^Q, W^K, W^V, W^O and the feed-forward's two.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "out_proj", "linear1", "linear2")


@dataclass(frozen=True)
class SFTConfig:
    """Fine-tuning on the particle instructions: the same budget for every start and method."""

    steps: int = 150
    batch_size: int = 32
    learning_rate: float = 1e-3  # full fine-tuning: AdamW, constant after a short warm-up
    lora_learning_rate: float = 1e-2  # LoRA: A and B only, ten times larger (Hu et al.)
    lora_rank: int = 4
    lora_alpha: float = 8.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "lora_rank"):
            check_int(getattr(self, name), name)


@dataclass
class SFTResult:
    """One fine-tuning run: exact match on the held-out nouns before, and on both noun sets
    after."""

    start: str  # "pretrained" or "random"
    method: str  # "full" or "lora"
    before_test: float
    train: float
    test: float
    trainable: int
    total: int
    losses: list[float]
    seconds: float
    model: GPT


def finetune_particles(
    pretrained: PretrainedGPT,
    start: str = "pretrained",
    method: str = "full",
    config: SFTConfig | None = None,
) -> SFTResult:
    """Fine-tune a copy of ``pretrained``'s model (or the same architecture, random) on the
    fine-tuning nouns' instructions; exact match on the held-out nouns before, on both after."""
    if start not in ("pretrained", "random"):
        raise ValueError(f"start must be 'pretrained' or 'random', got {start!r}")
    if method not in ("full", "lora"):
        raise ValueError(f"method must be 'full' or 'lora', got {method!r}")
    config = SFTConfig() if config is None else config
    vocab = pretrained.text.vocab
    train_nouns, test_nouns = particle_nouns(vocab)
    train_items, test_items = particle_items(train_nouns), particle_items(test_nouns)
    torch.manual_seed(config.seed)
    model = copy.deepcopy(pretrained.model)
    if start == "random":
        model = GPT(model.config)
    before = exact_match(model, test_items, vocab)
    rate = config.learning_rate
    if method == "lora":
        add_lora(model, LORA_TARGETS, r=config.lora_rank, alpha=config.lora_alpha)
        rate = config.lora_learning_rate
    trainable, total = trainable_share(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=rate,
                                  weight_decay=0.0, foreach=True)  # fmt: skip
    warmup = max(1, config.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    inputs, targets, _ = encode_sft(train_items, vocab)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    started = time.perf_counter()
    model.train()
    for _ in range(config.steps):
        pick = torch.randint(0, len(train_items), (config.batch_size,), generator=generator)
        loss = model.loss(inputs[pick], targets[pick])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    seconds = time.perf_counter() - started
    return SFTResult(start, method, before, exact_match(model, train_items, vocab),
                     exact_match(model, test_items, vocab), trainable, total, losses, seconds,
                     model.eval())  # fmt: skip


# ---------------------------------------------------------------------------
# DPO
# ---------------------------------------------------------------------------


def encode_pairs(
    items: Sequence[ParticleItem], vocab: Vocab
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Chosen and rejected sequences for DPO: each (inputs (B, T), targets (B, T)).

    The prompt is the noun at the start of a line (a line break, then the noun);
    the response is the right particle (chosen) or the other form (rejected).
    Targets are −100 except on the response's tokens.
    """
    if not items:
        raise ValueError("items is empty")
    out: list[torch.Tensor] = []
    for which in ("right", "wrong"):
        rows = [_ids("\n" + item.noun + getattr(item, which), vocab) for item in items]
        prompts = torch.tensor([1 + len(item.noun) for item in items])
        out.extend(completion_targets(_padded(rows, vocab.unk_id), prompts, vocab.unk_id))
    return out[0], out[1], out[2], out[3]


def sequence_logprobs(model: GPT, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log π(response | prompt) (B,): the sum of the targets' log-probabilities, −100 skipped."""
    log_probs = F.log_softmax(model(inputs), dim=-1)  # (B, T, V)
    scored = targets != -100
    picked = log_probs.gather(-1, targets.clamp(min=0)[..., None])[..., 0]  # (B, T)
    return (picked * scored).sum(dim=1)


def dpo_loss(
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float = 0.1,
) -> torch.Tensor:
    """DPO's loss, the mean over pairs of −log σ(β · ((log π_c − log π_ref,c) − (log π_r −
    log π_ref,r))): each argument (B,) holds sequence log-probabilities."""
    for name, t in (("rejected", rejected), ("ref_chosen", ref_chosen),
                    ("ref_rejected", ref_rejected)):  # fmt: skip
        if t.shape != chosen.shape:
            raise ValueError(f"{name} must have chosen's shape {tuple(chosen.shape)}, got "
                             f"{tuple(t.shape)}")  # fmt: skip
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    margin = (chosen - ref_chosen) - (rejected - ref_rejected)
    return -F.logsigmoid(beta * margin).mean()


@torch.no_grad()
def preference_accuracy(model: GPT, items: Sequence[ParticleItem], vocab: Vocab) -> float:
    """The share of pairs whose right particle ``model`` finds more likely than the wrong one."""
    model.eval()
    ci, ct, ri, rt = encode_pairs(items, vocab)

    def logprobs(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # (B,)
        chunks = zip(inputs.split(_CHUNK), targets.split(_CHUNK), strict=True)
        return torch.cat([sequence_logprobs(model, i, t) for i, t in chunks])

    return float((logprobs(ci, ct) > logprobs(ri, rt)).float().mean())


@dataclass(frozen=True)
class DPOConfig:
    """DPO on the particle pairs of the fine-tuning nouns."""

    steps: int = 100
    batch_size: int = 32
    beta: float = 0.5  # how strongly the policy is held to the reference, in the loss
    learning_rate: float = 3e-4
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            check_int(getattr(self, name), name)


@dataclass
class DPOResult:
    """Preference accuracy before and after DPO, on both noun sets, and the perplexity cost."""

    before_train: float
    before_test: float
    train: float
    test: float
    perplexity_before: float  # held-out text (13장's pretraining split)
    perplexity_after: float
    losses: list[float]
    seconds: float


def dpo_particles(pretrained: PretrainedGPT, config: DPOConfig | None = None) -> DPOResult:
    """DPO on a copy of ``pretrained``'s model; the pretrained model is the frozen reference."""
    config = DPOConfig() if config is None else config
    vocab = pretrained.text.vocab
    train_nouns, test_nouns = particle_nouns(vocab)
    train_items, test_items = particle_items(train_nouns), particle_items(test_nouns)
    reference = pretrained.model.eval()
    ci, ct, ri, rt = encode_pairs(train_items, vocab)
    with torch.no_grad():
        ref_chosen, ref_rejected = (
            sequence_logprobs(reference, ci, ct),
            sequence_logprobs(reference, ri, rt),
        )
    torch.manual_seed(config.seed)
    policy = copy.deepcopy(reference)
    before = (
        preference_accuracy(policy, train_items, vocab),
        preference_accuracy(policy, test_items, vocab),
    )
    optimizer = torch.optim.AdamW(policy.parameters(), lr=config.learning_rate, weight_decay=0.0,
                                  foreach=True)  # fmt: skip
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    started = time.perf_counter()
    policy.train()
    for _ in range(config.steps):
        pick = torch.randint(0, len(train_items), (config.batch_size,), generator=generator)
        loss = dpo_loss(sequence_logprobs(policy, ci[pick], ct[pick]),
                        sequence_logprobs(policy, ri[pick], rt[pick]),
                        ref_chosen[pick], ref_rejected[pick], config.beta)  # fmt: skip
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    seconds = time.perf_counter() - started
    text = pretrained.text
    after, _ = stream_perplexity(policy, text.held_out, text.vocab["\n"])
    return DPOResult(*before, preference_accuracy(policy, train_items, vocab),
                     preference_accuracy(policy, test_items, vocab), pretrained.perplexity, after,
                     losses, seconds)  # fmt: skip


# ---------------------------------------------------------------------------
# The chapter's runs, kept by recipe and trained in the background
# ---------------------------------------------------------------------------


@dataclass
class PostTraining:
    """Every post-training run of the chapter on one pretrained model."""

    sft: dict[tuple[str, str], SFTResult]  # by (start, method); each result's model included
    dpo: DPOResult
    cached: bool


#: The parts of the post-training, each one job and one cached result: DPO (the longest, first)
#: and SFT's three runs, (start, method).
PARTS: tuple[str, ...] = ("dpo", "pretrained/full", "random/full", "pretrained/lora")


def _pretrained(config: GPTPretrainConfig, wait: bool) -> PretrainedGPT:
    """``config``'s pretrained model; with ``wait`` (a worker process beside the one that
    pretrains it) once its file is in the cache, for at most half an hour."""
    path = runs.cache_path("gpt-pretrain", asdict(config))
    deadline = time.monotonic() + 1800
    while wait and path is not None and not path.is_file():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no pretrained model appeared at {path} in half an hour")
        time.sleep(0.2)
    return pretrain_char_gpt(config, show_progress=False)


def _part(
    config: GPTPretrainConfig, sft: SFTConfig, dpo: DPOConfig, part: str, wait: bool = False
) -> tuple[dict[str, Any], bool]:
    """One part of :data:`PARTS`, cached by recipe: its numbers (and an SFT model's weights)."""

    def compute() -> dict[str, Any]:
        pretrained = _pretrained(config, wait)
        if part == "dpo":
            return vars(dpo_particles(pretrained, dpo))
        start, method = part.split("/")
        result = finetune_particles(pretrained, start, method, sft)
        return {**{k: v for k, v in vars(result).items() if k != "model"},
                "state": result.model.state_dict()}  # fmt: skip

    recipe = (asdict(config), asdict(sft), asdict(dpo), part)
    return runs.cached("gpt-posttraining", recipe, compute)


def run_posttraining(
    config: GPTPretrainConfig | None = None,
    sft: SFTConfig | None = None,
    dpo: DPOConfig | None = None,
) -> PostTraining:
    """The parts of :data:`PARTS` on ``config``'s pretrained model: three fine-tuning runs
    ((start, method)) and DPO; each cached by recipe."""
    config = GPTPretrainConfig() if config is None else config
    sft = SFTConfig() if sft is None else sft
    dpo = DPOConfig() if dpo is None else dpo
    pretrained = pretrain_char_gpt(config, show_progress=False)
    results = {}
    all_cached = True
    for part in PARTS:
        runs.wait_for(("gpt-posttraining", config, sft, dpo, part))
        saved, cached = _part(config, sft, dpo, part)
        all_cached = all_cached and cached
        if part == "dpo":
            dpo_result = DPOResult(**saved)
            continue
        start, method = part.split("/")
        model = copy.deepcopy(pretrained.model)
        if method == "lora":
            add_lora(model, LORA_TARGETS, r=sft.lora_rank, alpha=sft.lora_alpha)
        model.load_state_dict(saved["state"])
        numbers = {k: v for k, v in saved.items() if k != "state"}
        results[start, method] = SFTResult(**numbers, model=model.eval())
    return PostTraining(results, dpo_result, all_cached)


def start_ch13_training(
    config: GPTPretrainConfig | None = None,
    sweep: Sequence[GPTPretrainConfig] = SIZE_SWEEP,
    sft: SFTConfig | None = None,
    dpo: DPOConfig | None = None,
) -> bool:
    """Train, in worker processes, what the chapter needs while it goes on.

    The jobs run in one process per core (at most one per job, as
    :class:`~course_utils.runs.Jobs` starts them): one pretrains ``config``,
    one the sweep's other sizes, and each part of the post-training
    (:data:`PARTS`) is a job that waits for the pretrained model's file.
    :func:`pretrain_char_gpt` and :func:`run_posttraining` wait for them and
    load the results from the cache.
    Nothing starts on a GPU, on one core, with the cache off or when the cache
    holds everything. Returns whether anything was started.
    """
    config = GPTPretrainConfig() if config is None else config
    sft = SFTConfig() if sft is None else sft
    dpo = DPOConfig() if dpo is None else dpo
    if runs.background_workers() < 2:
        return False

    def missing(kind: str, key: object) -> bool:
        path = runs.cache_path(kind, key)
        return path is not None and not path.is_file()

    others = tuple(c for c in sweep if c != config and missing("gpt-pretrain", asdict(c)))
    recipe = (asdict(config), asdict(sft), asdict(dpo))
    parts = [p for p in PARTS if missing("gpt-posttraining", (*recipe, p))]
    jobs: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
    produces: list[tuple[object, ...]] = []
    if missing("gpt-pretrain", asdict(config)):
        jobs.append((pretrain_group, ((config,),)))
        produces.append(("gpt-pretrain", config))
    if others:
        jobs.append((pretrain_group, (others,)))
        produces.append(("gpt-pretrain", *others))
    for part in parts:
        jobs.append((_part, (config, sft, dpo, part, True)))
        produces.append(("gpt-posttraining", config, sft, dpo, part))
    if not jobs:
        return False
    pool = runs.Jobs(jobs, least=1)
    if not pool.in_background:
        return False
    # the nouns come from KoNLPy's Okt: found here while the workers pretrain, and cached
    # for the post-training parts
    particle_nouns(korean_char_text().vocab)

    def waiting(i: int) -> Callable[[], list[Any]]:
        return lambda: pool.results([i])  # a worker's error is raised here

    for i, what in enumerate(produces):
        if what[0] == "gpt-pretrain":
            for pretraining in what[1:]:
                runs.will_produce(("gpt-pretrain", pretraining), waiting(i))
        else:
            runs.will_produce(what, waiting(i))
    return True
