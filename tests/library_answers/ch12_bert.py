"""Library answers for ch12_bert: transformers' WordpieceTokenizer, BertTokenizerLegacy, BertModel and
AlbertModel (on the meta device), tokenizers' Unigram (Viterbi over equal-score pieces), sentence-transformers'
Pooling and Normalize, and torch, which the rules forbid.

q2 has no library twin: no installed package implements the original BERT code's
create_masked_lm_predictions (transformers 5's whole-word collator draws a Bernoulli per word), so its
answer uses torch only for the shuffle order and the 80/10/10 replacement, around plain-Python selection.
"""

LIBRARY = [
    (
        "q1",
        "def wordpiece_greedy",
        "from tokenizers.models import Unigram\n"
        "try:\n"
        "    from transformers.models.bert import WordpieceTokenizer\n"
        "except ImportError:\n"
        "    from transformers.models.bert.tokenization_bert import WordpieceTokenizer\n"
        "def wordpiece_greedy(word, vocab, max_chars=100):\n"
        "    if not isinstance(word, str) or not word or any(c.isspace() for c in word):\n"
        "        raise ValueError(f'word must be one non-empty word, got {word!r}')\n"
        "    ids = {token: i for i, token in enumerate(vocab)}\n"
        "    return WordpieceTokenizer(vocab=ids, unk_token='[UNK]', max_input_chars_per_word=max_chars).tokenize(word)\n"
        "def fewest_pieces(word, vocab):\n"
        "    if not isinstance(word, str) or not word or any(c.isspace() for c in word):\n"
        "        raise ValueError(f'word must be one non-empty word, got {word!r}')\n"
        "    # Unigram's Viterbi with one small equal score per piece finds the fewest pieces; a first piece\n"
        "    # must start at the '\\u2581' put before the word, a ## piece must not.\n"
        "    pieces = {'\\u2581\\u2581<unk>': -1e-3}\n"
        "    for token in vocab:\n"
        "        piece = token[2:] if token.startswith('##') else '\\u2581' + token\n"
        "        if piece and piece != '\\u2581':\n"
        "            pieces[piece] = -1e-3\n"
        "    model = Unigram(list(pieces.items()), unk_id=0, byte_fallback=False)\n"
        "    found = model.tokenize('\\u2581' + word)\n"
        "    return None if any(t.id == 0 for t in found) else len(found)\n",
        "transformers",
    ),
    (
        "q2",
        "def original_bert_masking",
        "import torch\n"
        "def original_bert_masking(tokens, priority, action, random_tokens, masked_lm_prob=0.15, max_predictions=20, whole_word=False):\n"
        "    n = len(tokens)\n"
        "    if not len(priority) == len(action) == len(random_tokens) == n:\n"
        "        raise ValueError('priority, action and random_tokens need one entry per token')\n"
        "    groups = []\n"
        "    for i, token in enumerate(tokens):\n"
        "        if token in ('[CLS]', '[SEP]'):\n"
        "            continue\n"
        "        if whole_word and groups and token.startswith('##'):\n"
        "            groups[-1].append(i)\n"
        "        else:\n"
        "            groups.append([i])\n"
        "    order = torch.argsort(torch.tensor([priority[g[0]] for g in groups], dtype=torch.float64))\n"
        "    num_to_predict = min(max_predictions, max(1, int(round(n * masked_lm_prob))))\n"
        "    chosen = []\n"
        "    for j in order.tolist():\n"
        "        if len(chosen) >= num_to_predict:\n"
        "            break\n"
        "        if len(chosen) + len(groups[j]) <= num_to_predict:\n"
        "            chosen += groups[j]\n"
        "    picked = torch.zeros(n, dtype=torch.bool)\n"
        "    picked[chosen] = True\n"
        "    draws = torch.tensor(list(action), dtype=torch.float64)\n"
        "    masked, replaced = picked & (draws < 0.8), picked & (draws >= 0.9)\n"
        "    output = ['[MASK]' if masked[i] else random_tokens[i] if replaced[i] else token for i, token in enumerate(tokens)]\n"
        "    positions = sorted(chosen)\n"
        "    return output, positions, [tokens[i] for i in positions]\n",
        "torch",
    ),
    (
        "q3",
        "def encode_pair",
        "import functools\n"
        "import tempfile\n"
        "from pathlib import Path\n"
        "try:\n"
        "    from transformers.models.bert import BertTokenizerLegacy\n"
        "except ImportError:\n"
        "    from transformers import BertTokenizer as BertTokenizerLegacy\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def bert_tokenizer(cls_id, sep_id, pad_id):\n"
        "    size = max(cls_id, sep_id, pad_id) + 3\n"
        "    lines = [f'[unused{i}]' for i in range(size)]\n"
        "    lines[cls_id], lines[sep_id], lines[pad_id] = '[CLS]', '[SEP]', '[PAD]'\n"
        "    lines[size - 2], lines[size - 1] = '[UNK]', '[MASK]'\n"
        "    path = Path(tempfile.mkdtemp()) / 'vocab.txt'\n"
        "    path.write_text('\\n'.join(lines) + '\\n', encoding='utf-8')\n"
        "    return BertTokenizerLegacy(str(path))\n"
        "def encode_pair(first_ids, second_ids, max_length, cls_id, sep_id, pad_id, truncation='longest_first'):\n"
        "    first, second = list(first_ids), list(second_ids)\n"
        "    if not first or not second:\n"
        "        raise ValueError('both sentences need a token')\n"
        "    if truncation == 'longest_first' and max_length < 5:\n"
        "        raise ValueError(f'longest_first needs max_length >= 5, got {max_length}')\n"
        "    if truncation == 'only_second' and len(first) + 3 > max_length:\n"
        "        raise ValueError('the first sentence does not fit')\n"
        "    if truncation not in ('longest_first', 'only_second'):\n"
        "        raise ValueError(f'unknown truncation {truncation!r}')\n"
        "    keys = ['input_ids', 'token_type_ids', 'attention_mask', 'special_tokens_mask']\n"
        "    encoded = bert_tokenizer(int(cls_id), int(sep_id), int(pad_id)).prepare_for_model(\n"
        "        first, second, truncation=truncation, max_length=max_length, padding='max_length',\n"
        "        return_token_type_ids=True, return_attention_mask=True, return_special_tokens_mask=True,\n"
        "    )\n"
        "    return {key: list(encoded[key]) for key in keys}\n",
        "transformers",
    ),
    (
        "q4",
        "def albert_parameter_count",
        "import torch\n"
        "from transformers import AlbertConfig, AlbertModel, BertConfig, BertModel\n"
        "def albert_parameter_count(vocab_size, hidden_size, num_layers, intermediate_size, max_positions=512, type_vocab=2,\n"
        "                           embedding_size=None, num_groups=None, pooler=True):\n"
        "    groups = num_layers if num_groups is None else num_groups\n"
        "    if groups < 1 or num_layers % groups:\n"
        "        raise ValueError(f'num_groups={num_groups} does not divide num_layers={num_layers}')\n"
        "    common = dict(vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers, num_attention_heads=1,\n"
        "                  intermediate_size=intermediate_size, max_position_embeddings=max_positions, type_vocab_size=type_vocab)\n"
        "    with torch.device('meta'):\n"
        "        if embedding_size is None:\n"
        "            model = BertModel(BertConfig(**common), add_pooling_layer=pooler)\n"
        "        else:\n"
        "            config = AlbertConfig(**common, embedding_size=embedding_size, num_hidden_groups=groups, inner_group_num=1)\n"
        "            model = AlbertModel(config, add_pooling_layer=pooler)\n"
        "    return sum(p.numel() for p in model.parameters())\n",
        "transformers",
    ),
    (
        "q5",
        "def pool_sentences",
        "import warnings\n"
        "import torch\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    try:\n"
        "        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling\n"
        "    except ImportError:\n"
        "        from sentence_transformers.models import Normalize, Pooling\n"
        "def pool_sentences(hidden, attention_mask, mode='mean', normalize=True):\n"
        "    if mode not in ('mean', 'mean_sqrt_len_tokens', 'max', 'cls', 'lasttoken'):\n"
        "        raise ValueError(f'unknown mode {mode!r}')\n"
        "    hidden, mask = np.asarray(hidden, dtype=float), np.asarray(attention_mask)\n"
        "    if hidden.ndim != 3 or mask.shape != hidden.shape[:2]:\n"
        "        raise ValueError(f'hidden (B, T, d) and attention_mask (B, T), got {hidden.shape}, {mask.shape}')\n"
        "    if not mask.astype(bool).any(axis=1).all():\n"
        "        raise ValueError('a row of attention_mask has no real token')\n"
        "    features = {'token_embeddings': torch.tensor(hidden), 'attention_mask': torch.tensor(mask.astype(bool).astype(np.int64))}\n"
        "    if mode == 'cls':  # the first real token is the last real token of the reversed row (left padding)\n"
        "        features = {name: value.flip(1) for name, value in features.items()}\n"
        "        mode = 'lasttoken'\n"
        "    features = Pooling(hidden.shape[2], pooling_mode=mode)(features)\n"
        "    if normalize:\n"
        "        features = Normalize()(features)\n"
        "    return features['sentence_embedding'].numpy()\n",
        "sentence_transformers",
    ),
]
