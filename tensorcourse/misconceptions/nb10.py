"""Misconceptions of notebook 10-training-script (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "10-training-script"

_DATA = "1. Data: what `default_collate` does, and when you need a `collate_fn`"
_EX1 = "Exercise 1 (predict, 3 points): what does `default_collate` return?"
_EX2 = "Exercise 2 (implement, 4 points): a padding `collate_fn`"
_LOOP = "2. Device, precision, and the training loop"
_EX3 = "Exercise 3 (predict, 3 points): `GradScaler` meets an inf gradient"
_SEEDS = "3. Reproducibility: the same numbers, twice"
_EX4 = "Exercise 4 (implement, 3 points): `seed_everything`"
_RESUME = "4. Checkpoints: stop, resume, and get the same model"
_SAVE = "What to save, and `torch.load(weights_only=...)`"
_EX5 = "Exercise 5 (fix, 4 points): a checkpoint that resumes bit-identically"
_DEPLOY = "6. Deployment: eager, `torch.compile`, `torch.export`, TorchScript"
_EX6 = "Exercise 6 (measure, 3 points): first call and steady state, separately"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: what default_collate returns
    Misconception("collate-keeps-numbers-as-list",
                  "`default_collate` stacks only tensors and leaves the numbers of a batch (a dict's int "
                  "field) as a Python list", _DATA),
    Misconception("python-float-is-float32",
                  "a batch of Python floats becomes a float32 tensor, torch's default dtype", _DATA),
    Misconception("list-sample-kept-whole",
                  "a batch of list samples stays a list with one entry per sample", _DATA),
    Misconception("collate-pads-ragged",
                  "`default_collate` pads tensors of different lengths so that it can stack them", _DATA),
    Misconception("type-as-string",
                  "a type or a dtype can be given by its name in a string, such as `'torch.float32'`", _EX1),
    # Exercise 2: pad_collate
    Misconception("padding-side-free", "the padding can go before a sequence as well as after it", _DATA),
    Misconception("int32-lengths", "any integer dtype will do for the lengths, int32 as well as int64", _EX2),
    Misconception("lengths-as-list",
                  "the lengths can be returned as a Python list: they are only counts", _EX2),
    Misconception("zeros-takes-dtype",
                  "a buffer made with `torch.zeros` takes the dtype of the sequences copied into it", _EX2),
    # Exercise 3: GradScaler and an inf gradient
    Misconception("unscale-repairs-inf",
                  "`unscale_` repairs inf or NaN gradients, so every gradient is finite afterwards", _EX3),
    Misconception("step-applies-inf-update",
                  "`scaler.step` still runs the optimizer when a gradient is inf, so the weights change and "
                  "Adam counts the step", _LOOP),
    Misconception("scale-grows-after-2000-steps",
                  "the scale grows only after 2000 good steps, whatever `growth_interval` says", _EX3),
    Misconception("adam-counts-skipped-step",
                  "Adam counts a step that `GradScaler` skipped, although the weights did not change", _EX3),
    # Exercise 4: seed_everything
    Misconception("seeding-one-seeds-all",
                  "seeding one or two of `random`, NumPy and torch seeds the others too", _SEEDS),
    Misconception("manual-seed-returns-new-generator",
                  "`torch.manual_seed(seed)` returns a new generator of its own, independent of the global "
                  "one", _SEEDS),
    Misconception("fresh-generator-is-seeded",
                  "a new `torch.Generator()` follows the global seed, so it needs no seed of its own",
                  _SEEDS),
    Misconception("numpy-int-is-int",
                  "a NumPy integer such as `np.int64(3)` is a Python `int`, so it is a valid seed", _EX4),
    Misconception("any-seed-is-valid",
                  "every library accepts any seed, so `seed_everything` need not check it", _EX4),
    # Exercise 5: a checkpoint that resumes bit-identically
    Misconception("checkpoint-without-rng",
                  "the model, optimizer, scaler and epoch are all a resumed run needs; the random states "
                  "need not be saved", _RESUME),
    Misconception("loader-generator-not-saved",
                  "torch's global RNG state covers the DataLoader's shuffle order, so the loader's own "
                  "generator need not be saved", _SAVE),
    Misconception("python-rng-not-saved",
                  "nothing in a torch training run draws from Python's `random`, so its state need not be "
                  "saved", _SAVE),
    Misconception("numpy-rng-not-saved",
                  "nothing in a torch training run draws from NumPy's global RNG, so its state need not be "
                  "saved", _SAVE),
    Misconception("torch-rng-not-saved",
                  "once the weights and the loader's generator are restored, torch's global RNG (dropout "
                  "masks, `torch.randn` noise) need not be", _SAVE),
    Misconception("optimizer-not-restored",
                  "restoring the weights is enough: the optimizer (Adam's moments and step counts) can start"
                  " over", _SAVE),
    Misconception("scaler-not-restored",
                  "a `GradScaler` holds nothing worth saving, so a resumed run can start with a fresh one",
                  _SAVE),
    Misconception("weights-only-loads-anything",
                  "`torch.load(..., weights_only=True)` reads back whatever was saved, NumPy's RNG state (a "
                  "NumPy array) included", _SAVE),
    Misconception("resume-at-saved-epoch",
                  "a resumed run starts at the saved epoch, although that epoch has already finished", _EX5),
    Misconception("state-outside-file",
                  "a checkpoint may keep its states in the running Python process; the file need not hold "
                  "them", _RESUME),
    # Exercise 6: first call and steady state
    Misconception("repeats-counts-the-first-call",
                  "`repeats` counts the first call too, so `fn` runs `repeats` times in all", _EX6),
    Misconception("first-call-in-the-median",
                  "the first call is one more sample of the steady state, so it belongs in the median",
                  _DEPLOY),
    Misconception("steady-is-the-mean",
                  "the steady-state time is the mean of the later calls (their total divided by their "
                  "number), even with a slow outlier among them", _DEPLOY),
)
