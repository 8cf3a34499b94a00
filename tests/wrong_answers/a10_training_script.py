"""Wrong answers for 10-training-script (see __init__.py for the format)."""

_COLLATE_RIGHT = {
    "dict shape": "(4, 3)",
    "dict y type": "torch.Tensor",
    "numpy dtype": "torch.float32",
    "float dtype": "torch.float64",
    "pairs len": "2",
    "strings type": "list",
    "ragged raises": "True",
}

_SCALER_RIGHT = {
    "(a) grad finite after unscale_": "False",
    "(b) w changed": "False",
    "(c) scale after the inf step": "32768.0",
    "(d) Adam state entries": "0",
    "(e) scale after two good steps": "65536.0",
    "(f) Adam step count": "2",
}


def _collate(**changes: str) -> str:
    """The right prediction with the entries whose key starts with each given prefix changed."""
    table = dict(_COLLATE_RIGHT)
    for prefix, value in changes.items():
        table[next(k for k in table if k.startswith(prefix))] = value
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return "predicted_collate = {\n" + body + "}\n"


def _scaler(**changes: str) -> str:
    table = dict(_SCALER_RIGHT)
    for letter, value in changes.items():
        table[next(k for k in table if k.startswith(f"({letter})"))] = value
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return "predicted_scaler = {\n" + body + "}\n"


_PAD_HEAD = "def pad_collate(batch):\n"
_PAD_CHECK = "    if len(batch) == 0:\n        raise ValueError('empty batch')\n"
_PAD_SEQS = ("    seqs = [s for s, _ in batch]\n    longest = max(len(s) for s in seqs)\n"
             "    padded = seqs[0].new_zeros((len(batch), longest, *seqs[0].shape[1:]))\n")
_PAD_LABELS = "    labels = torch.tensor([int(y) for _, y in batch])\n"

_SEED_HEAD = "def seed_everything(seed):\n"
_SEED_CHECK = ("    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:\n"
               "        raise ValueError('bad seed')\n")

_CKPT_LOAD_RIGHT = (
    "def load_checkpoint(path, model, optimizer, scaler, generator):\n"
    "    ckpt = torch.load(path, weights_only=True)\n"
    "    model.load_state_dict(ckpt['model'])\n"
    "    optimizer.load_state_dict(ckpt['optimizer'])\n"
    "    scaler.load_state_dict(ckpt['scaler'])\n"
    "    torch.set_rng_state(ckpt['torch_rng'])\n"
    "    random.setstate(ckpt['python_rng'])\n"
    "    kind, keys, pos, has_gauss, cached = ckpt['numpy_rng']\n"
    "    np.random.set_state((kind, keys.numpy(), pos, has_gauss, cached))\n"
    "    generator.set_state(ckpt['loader_generator'])\n"
    "    return ckpt['epoch'] + 1\n"
)


def _save(*, numpy_as_tensor: bool = True, python: bool = True, generator: bool = True,
          numpy: bool = True) -> str:
    numpy_rng = ("(kind, torch.from_numpy(keys.copy()), pos, has_gauss, cached)" if numpy_as_tensor
                 else "np.random.get_state()")
    return (
        "def save_checkpoint(path, model, optimizer, scaler, generator, epoch):\n"
        + ("    kind, keys, pos, has_gauss, cached = np.random.get_state()\n" if numpy else "") +
        "    torch.save({'epoch': epoch, 'model': model.state_dict(), 'optimizer': optimizer.state_dict(),\n"
        "                'scaler': scaler.state_dict(), 'torch_rng': torch.get_rng_state(),\n"
        f"                'python_rng': {'random.getstate()' if python else 'None'},\n"
        f"                'numpy_rng': {numpy_rng if numpy else 'None'},\n"
        f"                'loader_generator': {'generator.get_state()' if generator else 'None'}}},\n"
        "               path)\n\n\n"
    )


def _load_without(*skipped: str) -> str:
    lines = _CKPT_LOAD_RIGHT.splitlines(keepends=True)
    return "".join(line for line in lines if not any(s in line for s in skipped))


_STEADY_HEAD = "import statistics\n\n\ndef first_and_steady(fn, repeats=5, clock=time.perf_counter):\n" + (
    "    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:\n"
    "        raise ValueError('repeats must be an int >= 1')\n")
_STEADY_TIMES = ("    times = []\n    for _ in range(repeats + 1):\n        start = clock()\n        fn()\n"
                 "        times.append(clock() - start)\n")

WRONG = {
    "ex1-collate-answer": [
        ("collate-keeps-numbers-as-list",
         "believes default_collate leaves the ints of a dict as a list", _collate(**{"dict y": "list"})),
        ("python-float-is-float32",
         "believes Python floats become float32", _collate(**{"float": "torch.float32"})),
        ("list-sample-kept-whole",
         "believes a list sample stays one entry per sample", _collate(**{"pairs": "5"})),
        ("collate-pads-ragged",
         "believes default_collate pads ragged tensors", _collate(**{"ragged": "False"})),
        ("type-as-string",
         "writes the dtypes as strings", _collate(numpy="'torch.float32'", float="'torch.float64'")),
    ],
    "ex2-pad-collate-answer": [
        ("padding-side-free", "pads on the left",
         _PAD_HEAD + _PAD_CHECK + _PAD_SEQS +
         "    for i, s in enumerate(seqs):\n        if len(s):\n"
         "            padded[i, longest - len(s):] = s\n"
         "    lengths = torch.tensor([len(s) for s in seqs])\n" + _PAD_LABELS +
         "    return padded, lengths, labels\n"),
        ("int32-lengths", "lengths as int32",
         _PAD_HEAD + _PAD_CHECK + _PAD_SEQS +
         "    for i, s in enumerate(seqs):\n        padded[i, :len(s)] = s\n"
         "    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.int32)\n" + _PAD_LABELS +
         "    return padded, lengths, labels\n"),
        ("lengths-as-list", "returns the lengths as a Python list",
         _PAD_HEAD + _PAD_CHECK +
         "    seqs = [s for s, _ in batch]\n"
         "    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)\n" + _PAD_LABELS +
         "    return padded, [len(s) for s in seqs], labels\n"),
        ("zeros-takes-dtype", "pads to the longest length but in float32 whatever the input dtype",
         _PAD_HEAD + _PAD_CHECK +
         "    seqs = [s for s, _ in batch]\n    longest = max(len(s) for s in seqs)\n"
         "    padded = torch.zeros((len(batch), longest, *seqs[0].shape[1:]))\n"
         "    for i, s in enumerate(seqs):\n        padded[i, :len(s)] = s\n"
         "    lengths = torch.tensor([len(s) for s in seqs])\n" + _PAD_LABELS +
         "    return padded, lengths, labels\n"),
    ],
    "ex3-scaler-answer": [
        ("unscale-repairs-inf", "believes unscale_ repairs inf gradients", _scaler(a="True")),
        ("step-applies-inf-update",
         "believes step() still applies the update (and Adam counts it)", _scaler(b="True", d="1", f="3")),
        ("scale-grows-after-2000-steps",
         "believes the scale only grows after 2000 steps, whatever growth_interval says",
         _scaler(e="32768.0")),
        ("adam-counts-skipped-step", "believes Adam counts the skipped step", _scaler(f="3")),
    ],
    "ex4-seed-answer": [
        ("seeding-one-seeds-all", "forgets NumPy",
         _SEED_HEAD + _SEED_CHECK + "    random.seed(seed)\n    torch.manual_seed(seed)\n"
         "    return torch.Generator().manual_seed(seed)\n"),
        ("manual-seed-returns-new-generator", "returns torch's global generator",
         _SEED_HEAD + _SEED_CHECK + "    random.seed(seed)\n    np.random.seed(seed)\n"
         "    return torch.manual_seed(seed)\n"),
        ("fresh-generator-is-seeded", "returns an unseeded generator",
         _SEED_HEAD + _SEED_CHECK + "    random.seed(seed)\n    np.random.seed(seed)\n"
         "    torch.manual_seed(seed)\n    return torch.Generator()\n"),
        ("numpy-int-is-int", "accepts NumPy integers (numbers.Integral) and converts them",
         "import numbers\n\n\n" + _SEED_HEAD +
         "    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):\n"
         "        raise ValueError('bad seed')\n"
         "    if not 0 <= seed < 2 ** 32:\n"
         "        raise ValueError('bad seed')\n"
         "    seed = int(seed)\n"
         "    random.seed(seed)\n    np.random.seed(seed)\n    torch.manual_seed(seed)\n"
         "    return torch.Generator().manual_seed(seed)\n"),
        ("any-seed-is-valid", "accepts any seed without checking it",
         _SEED_HEAD + "    random.seed(seed)\n    np.random.seed(seed % 2 ** 32)\n"
         "    torch.manual_seed(seed)\n    return torch.Generator().manual_seed(seed)\n"),
    ],
    "ex5-checkpoint-answer": [
        ("checkpoint-without-rng", "the article's checkpoint: no random state at all",
         "def save_checkpoint(path, model, optimizer, scaler, generator, epoch):\n"
         "    torch.save({'epoch': epoch, 'model': model.state_dict(), 'optimizer': optimizer.state_dict(),\n"
         "                'scaler': scaler.state_dict()}, path)\n\n\n"
         "def load_checkpoint(path, model, optimizer, scaler, generator):\n"
         "    ckpt = torch.load(path, weights_only=True)\n"
         "    model.load_state_dict(ckpt['model'])\n"
         "    optimizer.load_state_dict(ckpt['optimizer'])\n"
         "    scaler.load_state_dict(ckpt['scaler'])\n"
         "    return ckpt['epoch'] + 1\n"),
        ("loader-generator-not-saved", "forgets the DataLoader's generator",
         _save(generator=False) + _load_without("generator.set_state")),
        ("python-rng-not-saved",
         "forgets Python's random", _save(python=False) + _load_without("random.setstate")),
        ("numpy-rng-not-saved",
         "forgets NumPy's RNG state (np.random draws in the dataset differ after resuming)",
         _save(numpy=False) + _load_without("ckpt['numpy_rng']", "np.random.set_state")),
        ("optimizer-not-restored",
         "does not restore the optimizer (Adam's moments and step count start over)",
         _save() + _load_without("optimizer.load_state_dict")),
        ("weights-only-loads-anything", "stores NumPy's state as is: weights_only=True refuses the file",
         _save(numpy_as_tensor=False) +
         _CKPT_LOAD_RIGHT.replace("np.random.set_state((kind, keys.numpy(), pos, has_gauss, cached))",
                                  "np.random.set_state((kind, keys, pos, has_gauss, cached))")),
        ("resume-at-saved-epoch", "returns the saved epoch, so the resumed run repeats it",
         _save() + _CKPT_LOAD_RIGHT.replace("return ckpt['epoch'] + 1", "return ckpt['epoch']")),
        ("scaler-not-restored",
         "does not restore the scaler", _save() + _load_without("scaler.load_state_dict")),
        ("torch-rng-not-saved", "forgets torch's own RNG (dropout masks, torch.randn noise)",
         _save() + _load_without("torch.set_rng_state")),
        ("state-outside-file",
         "keeps the states in memory, keyed by path, instead of reading them from the file",
         "import copy\n\n_MEMORY = {}\n\n\n"
         "def save_checkpoint(path, model, optimizer, scaler, generator, epoch):\n"
         "    _MEMORY[path] = {'torch': torch.get_rng_state(), 'python': random.getstate(),\n"
         "                     'numpy': np.random.get_state(), 'gen': generator.get_state(),\n"
         "                     'model': {k: v.clone() for k, v in model.state_dict().items()},\n"
         "                     'optimizer': copy.deepcopy(optimizer.state_dict()),\n"
         "                     'scaler': scaler.state_dict(), 'epoch': epoch}\n"
         "    torch.save({'epoch': epoch}, path)\n\n\n"
         "def load_checkpoint(path, model, optimizer, scaler, generator):\n"
         "    torch.load(path, weights_only=True)\n"
         "    ckpt = _MEMORY[path]\n"
         "    model.load_state_dict(ckpt['model'])\n"
         "    optimizer.load_state_dict(ckpt['optimizer'])\n"
         "    scaler.load_state_dict(ckpt['scaler'])\n"
         "    torch.set_rng_state(ckpt['torch'])\n"
         "    random.setstate(ckpt['python'])\n"
         "    np.random.set_state(ckpt['numpy'])\n"
         "    generator.set_state(ckpt['gen'])\n"
         "    return ckpt['epoch'] + 1\n"),
    ],
    "ex6-first-steady-answer": [
        ("first-call-in-the-median", "includes the first (compiling) call in the median",
         _STEADY_HEAD + _STEADY_TIMES +
         "    return {'first': float(times[0]), 'steady': float(statistics.median(times))}\n"),
        ("steady-is-the-mean", "the mean instead of the median",
         _STEADY_HEAD + _STEADY_TIMES +
         "    return {'first': float(times[0]), 'steady': float(statistics.mean(times[1:]))}\n"),
        ("steady-is-the-mean", "times the later calls as one block and divides",
         _STEADY_HEAD + "    start = clock()\n    fn()\n    first = clock() - start\n    start = clock()\n"
         "    for _ in range(repeats):\n        fn()\n"
         "    return {'first': float(first), 'steady': float((clock() - start) / repeats)}\n"),
        ("repeats-counts-the-first-call", "calls fn once too few (repeats includes the first call)",
         _STEADY_HEAD + "    times = []\n    for _ in range(repeats):\n        start = clock()\n"
         "        fn()\n        times.append(clock() - start)\n"
         "    return {'first': float(times[0]), 'steady': float(statistics.median(times[1:] or times))}\n"),
    ],
}
