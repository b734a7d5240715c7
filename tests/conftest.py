"""Shared fixtures: a small synthetic corpus and a tiny from-scratch model; never a download."""

from __future__ import annotations

import os

import unlearnkit  # noqa: F401  (first: it pins the instruction set before torch and numpy load, unlearnkit.machine)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# make test runs on every core (pytest-xdist): each test process gets its share of them, and so do the notebooks and
# workers it starts (the thread policy of unlearnkit.models reads UNLEARNKIT_CORES).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    os.environ.setdefault("UNLEARNKIT_CORES", str(max(1, _cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from unlearnkit import models, paths, workers  # noqa: E402
from unlearnkit.data.tofu import TofuSource  # noqa: E402

#: The reference data sets beside the project on the team's machines (a fresh clone has none): tests that need
#: them skip with a reason. UNLEARNKIT_SHARED_DATA points elsewhere.
SHARED_DATA = Path(os.environ.get("UNLEARNKIT_SHARED_DATA", paths.ROOT.parent / "shared" / "data"))
REAL_TOFU = SHARED_DATA / "tofu"
HP_QA = SHARED_DATA / "hp_qa" / "hp_qa_en.csv"
#: The weights every unlearning loss names (the library has no default of its own): the default profile's forget
#: term at weight 1 and no entropy terms.
LOSS_WEIGHTS = {"forget_weight": 1.0, "lambda_f": 0.0, "lambda_r": 0.0}

torch.set_num_threads(workers.cores())


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory) -> TofuSource:
    from unlearnkit.data.synthetic import generate_synthetic_tofu

    folder = tmp_path_factory.mktemp("corpus")
    generate_synthetic_tofu(folder, n_authors=10, n_world_facts=12, n_real_authors=8, seed=3)
    return TofuSource(folder)


@pytest.fixture(scope="session")
def tiny_tokenizer(small_corpus):
    from unlearnkit.pipeline import all_texts

    return models.train_bpe_tokenizer(all_texts(small_corpus), vocab_size=512)


#: The sizes of the tests' tiny Llama.
TINY_LLAMA = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}


@pytest.fixture()
def tiny_model(tiny_tokenizer):
    return models.build_tiny_llama(tiny_tokenizer, TINY_LLAMA, seed=0)


@pytest.fixture()
def template():
    return models.TEMPLATES["phi"]


@pytest.fixture(scope="module")
def tiny_model_threads():
    """The library's CPU-thread policy for tiny models (:func:`unlearnkit.models.cpu_threads`) for a whole test
    module: decoding or training a tiny model is a chain of very small matmuls, and on two cores shared with
    other jobs two intra-op threads wait on each other (measured ~5-10x slower). A module opts in with
    ``pytestmark = pytest.mark.usefixtures("tiny_model_threads")``."""
    with models.cpu_threads(n_parameters=1):
        yield


# --------------------------------------------------------------------------- the per-method loss tests


@pytest.fixture(scope="module")
def make_method_batch(small_corpus, tiny_tokenizer):
    """Builds a per-method test's batch: the first ``n`` rows of small_corpus's forget10 and retain90 encoded with
    ``ul.encode_pairs`` (phi template, seed 0) and collated. ``alternates=True`` adds AltPO's ``forget_alt`` (each
    forget row's alternate from forget10_alternates), ``with_idk=True`` the refusals' ``forget_idk``;
    ``collate=False`` gives the encoded examples instead of the batch."""
    from method_checks import N, corpus_alternates, method_rows
    from unlearnkit import unlearning as ul

    def make(n=N, *, alternates=False, with_idk=False, collate=True):
        forget, retain = method_rows(small_corpus, n)
        extra = {"alternates": corpus_alternates(small_corpus, forget)} if alternates else {}
        examples = ul.encode_pairs(tiny_tokenizer, models.TEMPLATES["phi"], forget, retain, with_idk=with_idk,
                                   seed=0, **extra)
        return ul.collate_pairs(examples, tiny_tokenizer.pad_token_id) if collate else examples

    return make


@pytest.fixture(scope="module")
def method_batch(make_method_batch):
    """A per-method test's batch: ``forget`` and ``retain``, method_checks.N rows each."""
    return make_method_batch()


@pytest.fixture(scope="module")
def make_memorised_model(tiny_tokenizer, method_batch):
    """Builds a tiny Llama that has learnt the forget answers of ``method_batch``, as a target model has: AdamW
    (lr 1e-2) on the forget part's mean NLL for ``steps`` steps from a seeded start, then eval mode."""
    from unlearnkit import unlearning as ul

    def make(steps=25):
        torch.manual_seed(0)
        model = models.build_tiny_llama(tiny_tokenizer, TINY_LLAMA, seed=0)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        sub = method_batch["forget"]
        for _ in range(steps):
            loss = ul.mean_nll(model(input_ids=sub["input_ids"], attention_mask=sub["attention_mask"]).logits,
                               sub["labels"]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        return model

    return make


@pytest.fixture(scope="module")
def memorised_model(make_memorised_model):
    """A tiny model that has learnt the forget answers of ``method_batch`` (25 steps: its answer tokens' probabilities
    far above 1/V), as a target model has. Not to be trained in place: a test copies it first."""
    return make_memorised_model()


# --------------------------------------------------------------------------- received checkpoints


class _WritesOnUnpickle:
    """Unpickled, it writes its marker file: code a received pickle would run."""

    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        return (Path.write_text, (Path(self.target), "ran"))


class WritingPickle:
    """Plants pickles that write ``marker`` if anything unpickles them (``plant(path)``); ``ran``: whether one did."""

    def __init__(self, marker: Path):
        self.marker = marker

    def plant(self, path: Path) -> Path:
        torch.save(_WritesOnUnpickle(self.marker), path)
        return path

    @property
    def ran(self) -> bool:
        return self.marker.exists()


@pytest.fixture()
def writing_pickle(tmp_path) -> WritingPickle:
    """A pickle that proves, by a marker file in the test's folder, whether anything unpickled it."""
    return WritingPickle(tmp_path / "ran")


class KilledRun:
    """A small training job (tests/resume_job.py: 12 steps, a checkpoint every 4, two kept) killed with SIGKILL after
    step 6, as a crash leaves it: ``out`` holds checkpoint-4. ``resume()`` runs the same job again, in this process,
    to its end and returns the model."""

    def __init__(self, job, tokenizer_dir: Path, corpus_dir: Path, out: Path, stderr: str):
        self.job, self.tokenizer_dir, self.corpus_dir, self.out = job, tokenizer_dir, corpus_dir, out
        self.stderr = stderr  # what the killed run printed

    def resume(self) -> torch.nn.Module:
        return self.job.run(str(self.tokenizer_dir), str(self.corpus_dir), str(self.out))

    def history_steps(self) -> list[int]:
        import json

        return [h["step"] for h in json.loads((self.out / "history.json").read_text())]


@pytest.fixture()
def killed_run(small_corpus, tiny_tokenizer, tmp_path) -> KilledRun:
    import subprocess
    import sys

    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    import resume_job

    tok_dir = tmp_path / "tok"
    tiny_tokenizer.save_pretrained(tok_dir)
    out = tmp_path / "run"
    killed = subprocess.run([sys.executable, str(here / "resume_job.py"), str(tok_dir), str(small_corpus.folder),
                             str(out), "6"], capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr  # SIGKILL
    return KilledRun(resume_job, tok_dir, small_corpus.folder, out, killed.stderr)


# --- tests that can skip --------------------------------------------------------------------------------------------
# Every skip in tests/ goes through needs() or skip_unless(), which put into its reason what the test needs and what
# covers it where that is missing: another test by its path and name (which must exist), or CI (whose clone has
# ../shared beside it and no runs/). tests/test_skips.py holds every test file to this and docs/design.md to listing
# each test that can skip.


#: What every data-dependent skip reason carries (skip_reason): the mark and the terminal summary find them by it.
COVERED_MEANWHILE = "; covered meanwhile by "


def skip_reason(what: str, cover: str) -> str:
    return f"{what}{COVERED_MEANWHILE}{cover}"


def needs(available: bool, what: str, cover: str):
    """A mark that skips the test unless ``available``, naming ``what`` is missing and ``cover``."""
    return pytest.mark.skipif(not available, reason=skip_reason(what, cover))


def skip_unless(available: bool, what: str, cover: str) -> None:
    """Skip the running test unless ``available`` (a condition known only inside it), as :func:`needs` says."""
    if not available:
        pytest.skip(skip_reason(what, cover))


def requires_real_tofu(cover: str):
    return needs((Path(REAL_TOFU) / "full.json").exists(), "../shared/data/tofu is not beside the checkout (CI has it)",
                 cover)


#: The test files that take longest, in that order. Run first (longest processing time first), so that on several
#: cores (make test: pytest-xdist, one file per process at a time) the short files fill the other cores around them
#: instead of the smoke run starting last.
LONGEST_FIRST = ("test_notebooks.py", "test_distributed.py", "test_paper_dry.py", "test_formats.py",
                 "test_side_by_side.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its own order
    for item in items:  # a test needs() guards is data-dependent: `-m "not needs_data"` leaves it out
        if any(COVERED_MEANWHILE in str(m.kwargs.get("reason", "")) for m in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.needs_data)


def _skip_text(report) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def not_run_lines(skipped) -> list[str]:
    """The terminal summary's account of the tests that did not run for want of data, a device or a package (a skip through needs() or
    skip_unless(): its reason says what is missing and what covers it), so that a skip never reads as a pass: one
    line per test, or none when every such test ran."""
    missing = sorted({(r.nodeid, _skip_text(r)) for r in skipped if COVERED_MEANWHILE in _skip_text(r)})
    if not missing:
        return []
    return [f"{len(missing)} tests NOT RUN here for want of data, a device or a package this machine lacks (skipped, "
            "not passed; what is missing, and what covers each meanwhile):", *(f"  {nodeid}: {reason}" for nodeid, reason in missing)]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = not_run_lines(terminalreporter.stats.get("skipped", []))
    if lines:
        terminalreporter.section("tests not run here")
        for line in lines:
            terminalreporter.write_line(line)
