"""Shared fixtures: the repository root, a tiny random-init BERT, the finished tiny study,
a Snakemake runner, a local HTTP server; the two speeds (the `workflow` marker and the guard
that keeps the fast set, `make check`, free of Snakemake and training)."""

from __future__ import annotations

import importlib.machinery
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# make test runs one pytest-xdist worker per core: thread pools beyond one thread per worker
# (torch's OpenMP, numpy's BLAS) only contend with the other worker, and their waiting threads
# spin: a third of the CPU of the torch tests went to that. One thread each, for the workers
# and the workflows they start (set before torch or numpy is imported); a test that measures
# threads sets its own, and a variable already set is kept.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# The helper modules (tiny_study, tiny_models, beir_fixtures, crash_injection, ...): one folder,
# importable by name from every test folder, and run by path (launch_probe.py).
HELPERS = TESTS / "helpers"
# Snakemake through this interpreter: an entry script keeps the venv's path in its shebang,
# which a moved clone no longer has.
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
# The repository, the helpers and every test folder: a test imports another's builders by
# module name (`from test_claims import arm_scores`) wherever the two live.
sys.path[:0] = [str(ROOT), str(HELPERS),
                *sorted({str(p.parent) for p in TESTS.rglob("test_*.py")} - {str(HELPERS)})]

# The two speeds. `workflow` tests start Snakemake or train a bi-encoder: the files under
# tests/workflow/, every test that uses the tiny study (WORKFLOW_FIXTURES), and single tests
# marked @pytest.mark.workflow where a module is otherwise fast. `make check` runs the rest
# (-m "not workflow"), and the guard below makes a test outside the marker fail the moment it
# starts Snakemake or a training, so the split holds.
WORKFLOW_DIRS = ("workflow",)


def is_workflow_test(path: Path) -> bool:
    """Whether the tests in this file start Snakemake or train, by where the file lives."""
    rel = Path(path).resolve().relative_to(TESTS)
    return rel.parts[0] in WORKFLOW_DIRS


WORKFLOW_FIXTURES = {"tiny_run"}


def pytest_configure(config):
    # The tail calibration's tables (stats/tail_calibration.py), shared by this session's
    # processes: the pytest-xdist workers (started after this, with this environment) and the
    # workflows they run. A folder per session, so every session tabulates from scratch.
    from workflow_scripts.stats.tail_calibration import TABLE_FOLDER_ENV

    if not hasattr(config, "workerinput") and not os.environ.get(TABLE_FOLDER_ENV):
        config._tail_tables = tempfile.mkdtemp(prefix="depthlab-tail-tables-")
        os.environ[TABLE_FOLDER_ENV] = config._tail_tables


def pytest_unconfigure(config):
    folder = getattr(config, "_tail_tables", None)
    if folder:
        from workflow_scripts.stats.tail_calibration import TABLE_FOLDER_ENV

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(TABLE_FOLDER_ENV, None)


def pytest_collection_modifyitems(config, items):
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if is_workflow_test(item.path) or uses & WORKFLOW_FIXTURES:
            item.add_marker(pytest.mark.workflow)


class _FastGuard:
    """Set while a test outside the `workflow` marker runs (its set-up and teardown too)."""

    active: str | None = None  # the test's node id

    @classmethod
    def refuse(cls, what: str) -> None:
        if cls.active:
            raise RuntimeError(
                f"{cls.active} {what}: a test that starts Snakemake or trains is a workflow "
                "test; move it to tests/workflow/ or mark it @pytest.mark.workflow")


def starts_snakemake(argv) -> bool:
    """Whether a process's argv starts Snakemake: `python -m snakemake`, its entry script, or
    a shell command line that runs it (a word of its own, not text inside an argument)."""
    argv = [os.fspath(a) if not isinstance(a, bytes) else a.decode() for a in argv]
    if any(a == "snakemake" and argv[i - 1] == "-m" for i, a in enumerate(argv) if i):
        return True
    if argv and Path(argv[0]).name == "snakemake":
        return True
    shell = argv and Path(argv[0]).name in ("bash", "sh")
    return bool(shell and any(re.search(r"(^|[\s;&|(])snakemake(\s|$)", a) for a in argv[1:]))


def _refuse_snakemake(event: str, args) -> None:
    # Every process start passes here (subprocess.run, Popen, and so the preloaded server).
    if event == "subprocess.Popen" and _FastGuard.active:
        argv = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        if starts_snakemake(argv):
            _FastGuard.refuse(f"started Snakemake ({' '.join(map(str, argv))[:200]})")


sys.addaudithook(_refuse_snakemake)

# The bi-encoder's training, guarded where it is defined: wrapped when the module is first
# imported, so the fast set imports it (and torch) only where a test needs it.
TRAINING = {"workflow_scripts.biencoder.train": "train"}


class _TrainingGuard:
    def find_spec(self, name, path=None, target=None):
        if name not in TRAINING:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        exec_module = spec.loader.exec_module

        def exec_and_guard(module):
            exec_module(module)
            real = getattr(module, TRAINING[name])

            def guarded(*args, **kwargs):
                _FastGuard.refuse(f"trained a model ({name}.{TRAINING[name]})")
                return real(*args, **kwargs)

            setattr(module, TRAINING[name], guarded)

        spec.loader.exec_module = exec_and_guard
        return spec


sys.meta_path.insert(0, _TrainingGuard())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _FastGuard.active = None if item.get_closest_marker("workflow") else item.nodeid
    try:
        yield
    finally:
        _FastGuard.active = None


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 3-layer random-init BERT (hidden 32) with the MiniLM package's tokenizer."""
    from tiny_models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny", layers=3, hidden=32,
                           heads=2, intermediate=64, seed=0)


# Test files that use the tiny study (tiny_run below). `pytest -n N` (make test) runs each
# of these files on one pytest-xdist worker, together, so that the session's one run of the
# study is built once, not once per worker; every other test (but MODULE_STUDY_FILES') is
# scheduled on its own.
# (pytest-xdist's xdist_group marks cannot do it: 3.8.0 sets a node id attribute that
# pytest 9.2 no longer reads.)
TINY_STUDY_FILES = ("test_workflow.py", "test_slurm.py", "test_adaptive_seeds.py",
                    "test_ladder_workflow.py", "test_doc_commands.py")
# Files whose module fixture costs seconds (test_one_job_per_model's study, test_resume's
# reference, test_laptop_sizing's dry run; in the fast set, test_codedeps' import of every
# stage, test_stats_stage's tables, test_beir_equivalence's scores): each on one worker too,
# so that the fixture is built once, not once per worker that takes one of its tests; xdist
# queues such a group (as the tiny study's) before single tests.
MODULE_STUDY_FILES = ("test_one_job_per_model.py", "test_resume.py",
                      "test_laptop_sizing.py", "test_codedeps.py", "test_stats_stage.py",
                      "test_beir_equivalence.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "load":
        return None  # --dist given: xdist's own scheduler
    from xdist.scheduler import LoadScopeScheduling

    class TinyStudyScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            name = Path(path).name  # by file name: the same wherever the file lives
            if name in TINY_STUDY_FILES:
                return "tiny_study"
            return path if name in MODULE_STUDY_FILES else nodeid

    return TinyStudyScheduling(config, log)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_model):
    """The tiny study run once (tests/helpers/tiny_study.py): (workdir, config file, the snakemake
    process). Shared by every test that uses it: only read it; change a tiny_run_copy."""
    from tiny_study import run_tiny_study

    return run_tiny_study(tmp_path_factory.mktemp("tiny") / "study", tiny_model)


@pytest.fixture
def tiny_run_copy(tiny_run, tmp_path):
    """A copy of the finished tiny study, for a test that edits or reruns it: (workdir,
    config file)."""
    from tiny_study import copy_study

    wd, cfg, _ = tiny_run
    return copy_study(wd, cfg, tmp_path / "study")


# Pooling of each architecture's tiny model: CLS for some (as bge), no Normalize for one, so
# that every pooling the lean encoders reproduce is checked on some architecture.
ARCH_POOLING = {"bert": ("cls", True), "deberta-v2": ("cls", True),
                "xlm-roberta": ("mean", False)}


@pytest.fixture(scope="session")
def arch_model(tmp_path_factory):
    """model_type -> a 4-layer random-init model of that architecture (norm weights drawn
    at random), built once per session."""
    from tiny_models import make_tiny_model

    root, built = tmp_path_factory.mktemp("arch_models"), {}

    def get(model_type: str) -> Path:
        if model_type not in built:
            pooling, normalize = ARCH_POOLING.get(model_type, ("mean", True))
            built[model_type] = make_tiny_model(
                root / model_type, model_type=model_type, layers=4, hidden=32, heads=2,
                intermediate=64, seed=1, pooling=pooling, normalize=normalize,
                shake_norms=True)
        return built[model_type]

    return get


@pytest.fixture(scope="session")
def paper_hub_env(tmp_path_factory, tiny_model) -> dict[str, str]:
    """The environment of a machine whose Hugging Face cache holds config/paper.yaml's
    bert-base-uncased (a stand-in: the tiny model with bert-base's 12 layers in its config,
    all a dry run reads), offline: its plan needs no network (biencoder/model/hub.py)."""
    from tiny_models import hub_cache

    cache = hub_cache(tmp_path_factory.mktemp("hf") / "hub", "bert-base-uncased", tiny_model,
                      num_hidden_layers=12)
    return {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}


@pytest.fixture
def http_server(tmp_path):
    """The local HTTP server (tests/helpers/local_http.py), started, serving tmp_path/www."""
    from local_http import LocalServer

    with LocalServer(tmp_path / "www") as server:
        yield server


# What a user's clone needs to run the workflow (copy_workflow).
WORKFLOW_PARTS = ("Snakefile", "rules", "workflow_scripts", "config", "envs", "profiles",
                  "docs/report")


def docstring_study_data(d: Path, *, triples: int, queries: int, docs: int) -> Path:
    """Training triples (d/t.parquet) and a BEIR benchmark (d/bench) from pandas'
    docstrings, as the default study makes them, small."""
    from workflow_scripts.biencoder.data import docstrings
    from workflow_scripts.core import contracts

    pairs = docstrings.collect_pairs("pandas")
    docstrings.build_triples(pairs[:120], max_triples=triples, seed=0).to_parquet(d / "t.parquet")
    corpus, queries_, qrels = docstrings.build_beir(pairs[120:], max_queries=queries,
                                                    max_docs=docs, seed=0)
    contracts.write_beir(d / "bench", corpus, queries_, qrels)
    return d


def copy_workflow(dest) -> Path:
    """A copy of the workflow's files, as a clone would have them, to run studies inside."""
    dest = Path(dest)
    for part in WORKFLOW_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / part)
    return dest


_SERVER = []


def preload_server() -> str:
    """This test process's preloaded interpreter (core/launch.py), shared by the Snakemake
    runs of snakemake() below: each would otherwise import sentence-transformers (~7 s)
    again. Started with the environment those runs give their jobs (the modules it imports
    read it); it ends with this process."""
    if not _SERVER:
        from workflow_scripts.core import launch

        env = {**os.environ, "PYTHONHASHSEED": "0", "TOKENIZERS_PARALLELISM": "false"}
        env.pop(launch.SOCKET_ENV, None)
        _SERVER.append(launch.start_server(
            ["torch", "pandas", "pyarrow.parquet", "sentence_transformers"], env=env))
    return _SERVER[0].socket


def ctrl_c_reaches_it() -> None:
    """preexec_fn of a process a test interrupts with SIGINT: SIGINT at its default, as a
    terminal's foreground job has it. A suite started in the background (`make test &`,
    nohup) inherits SIGINT ignored, and an ignored signal stays ignored across exec, so
    Ctrl-C would never reach the Snakemake under test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def snakemake(workdir, *args, check=True, timeout=900, env=None) -> subprocess.CompletedProcess:
    """Run the workflow in `workdir` (outputs land there, not in the repo): the workflow
    copy there if it has one (copy_workflow), else the repository's. `env`: variables to
    set for it; without them the run's jobs fork from this process's preload_server()."""
    from workflow_scripts.core import launch

    shared = {} if env else {launch.SOCKET_ENV: preload_server()}
    env = {**os.environ, "PYTHONHASHSEED": "0", **shared, **(env or {})}
    workdir = Path(workdir)
    snakefile = workdir / "Snakefile" if (workdir / "Snakefile").exists() else ROOT / "Snakefile"
    cmd = [*SNAKEMAKE, "-s", str(snakefile), "--directory", str(workdir), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n"
                             f"{proc.stderr[-4000:]}")
    return proc


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake (dry-)run as {rule: count}."""
    counts, in_table = {}, False
    for line in output.splitlines():
        if line.startswith("Job stats:"):
            in_table, counts = True, {}
            continue
        if in_table:
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                if parts[0] == "total":
                    in_table = False
                else:
                    counts[parts[0]] = int(parts[1])
    return counts


def planned_jobs(output: str) -> list[tuple[str, str, list[str]]]:
    """(rule, reason, input files) of every job a `snakemake -n` output plans."""
    jobs, rule, inputs = [], None, []
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.rstrip().endswith(":"):
            rule, inputs = line.split()[1].rstrip(":"), []
        elif rule and line.strip().startswith("input:"):
            inputs = line.split("input:", 1)[1].strip().split(", ")
        elif rule and line.strip().startswith("reason:"):
            jobs.append((rule, line.split("reason:", 1)[1].strip(), inputs))
            rule = None
    return jobs


def trained_models(output: str) -> list[str]:
    """The model files that the training jobs (rule train, one per model) of a Snakemake
    (dry-)run output write."""
    models, rule = [], None
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.rstrip().endswith(":"):
            rule = line.split()[1].rstrip(":")
        elif rule and line.strip().startswith("output:"):
            if rule == "train":
                models += [f for f in line.split("output:", 1)[1].strip().split(", ")
                           if f.endswith("/model.safetensors")]
            rule = None
    return models
