"""The study plan: everything the workflow needs to know about a checked config, as pure
functions of that config. Which models are trained, which evaluation files each rule writes,
what the statistics, curves and claims read, the ladder's runs, the figures, the promised
outputs and the grid the claims are checked against.

Rules (rules/*.smk), the claims and the report ask this module; none of them re-derives the
grid. It reads no output on disk, so every parse of the same config plans the same DAG (a
cluster node that parses the workflow again sees the jobs the login node planned). Paths come
from core/paths.py. Standard library only: the Snakefile builds a plan on every call.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

from workflow_scripts.core import paths
from workflow_scripts.core.contracts import (
    BASE,
    COMPUTE_TABLES,
    CURVE_TABLES,
    DIMS_TABLE,
    METRICS,
    PER_DEPTH_REFERENCE,
    STATS_TABLES,
    TRAIN_ONCE,
    TRUNCATED,
    snapshot_steps,
    truncated_cut,
)
from workflow_scripts.ladder import KINDS, METHODS


@dataclasses.dataclass(frozen=True)
class Figure:
    """A bi-encoder figure: its name (rule figure_<name>, caption docs/report/<name>.rst,
    biencoder/report/figures.py draws it) and what it is drawn from, the statistics tables
    and, for pareto, the latency ladder; `pair`: it compares the budget pair."""
    name: str
    tables: tuple[str, ...] = ("ci", "seeds", "comparisons")
    latency: bool = False
    pair: bool = False
    dims: bool = False  # drawn from the layer x dimension table (eval.dims)


# The bi-encoder study's figures, in report order: the one registry that rules/figures.smk
# (one rule each) and the report read.
BIENCODER_FIGURES = (Figure("depth_vs_budget"), Figure("per_benchmark_change", pair=True),
                     Figure("seed_variance"), Figure("pareto", latency=True),
                     Figure("quality_vs_compute", tables=("ci", "compute")),
                     Figure("learning_curves", tables=("curves", "curves_onset")),
                     Figure("depth_by_dim", tables=("ci", DIMS_TABLE), dims=True))
_FIGURE = {f.name: f for f in BIENCODER_FIGURES}

# The evaluation rules (rules/evaluate.smk), by what each evaluates: which model (a trained
# per-depth model; a train-once model at every depth from one pass; the untrained base per
# depth, or for strategy top, one model cut at different layers, at every depth from one pass;
# the deepest per-depth model cut to a shallower depth, the fine-tuned-then-truncated arm,
# per depth or, for strategy top, at every shallower depth from one pass) and whether with
# the learning curve's snapshots (a recipe with eval_steps). The one registry: the rules'
# wildcard constraints and evaluation_jobs() both read it.
EVALUATIONS = {
    "evaluate_trained": ("per_depth", False),
    "evaluate_train_once": ("train_once", False),
    "evaluate_steps": ("per_depth", True),
    "evaluate_steps_train_once": ("train_once", True),
    "evaluate_base": ("base", False),
    "evaluate_base_one_pass": ("base_one_pass", False),
    "evaluate_truncated": ("truncated", False),
    "evaluate_truncated_one_pass": ("truncated_one_pass", False),
}


def regex(names) -> str:
    """A wildcard constraint matching exactly these names (none: nothing)."""
    return "|".join(map(re.escape, map(str, names))) or "(?!)"


class StudyPlan:
    """The plan of one config (validated, schema defaults filled: study_config.check_config)."""

    def __init__(self, config: dict):
        self.config = config
        self.has_biencoder = "recipes" in config
        self.has_ladder = "ladder" in config
        self.has_claims = bool(config.get("claims"))
        self.formats = list(config["figures"]["formats"])
        # Where this study's artifacts lie: its own results, checkpoints and logs folders.
        self.paths = paths.Study(config["study"])

    # ---- the bi-encoder grid -------------------------------------------------------------
    @functools.cached_property
    def depths(self) -> list[int]:
        return sorted(self.config["depths"])

    @property
    def max_depth(self) -> int:
        return self.depths[-1]

    @property
    def strategies(self) -> list[str]:
        """The per-depth strategies: one model per depth."""
        return list(self.config["strategies"])

    @property
    def recipes(self) -> dict:
        return self.config["recipes"]

    @property
    def benchmarks(self) -> list[str]:
        return list(self.config["benchmarks"])

    @property
    def train_data(self) -> str:
        return self.config["train_data"]

    @functools.cached_property
    def budget_order(self) -> list[str]:
        """Recipes by training budget (examples seen), smallest first."""
        r = self.recipes
        return sorted(r, key=lambda n: (r[n]["steps"] * r[n]["batch_size"], n))

    @functools.cached_property
    def budget_pair(self) -> list[str]:
        return self.config["figures"].get("budget_pair") or [self.budget_order[0],
                                                              self.budget_order[-1]]

    @functools.cached_property
    def curve_recipes(self) -> list[str]:
        """Recipes with a learning curve (eval_steps), in budget order."""
        return [r for r in self.budget_order if self.recipes[r]["eval_steps"]]

    def snapshot_steps(self, recipe: str) -> list[int]:
        """A recipe's learning-curve steps that get a snapshot (all but its last step)."""
        spec = self.recipes[recipe]
        return snapshot_steps(spec["eval_steps"], spec["steps"])

    def recipe_strategies(self, recipe: str) -> list[str]:
        """A recipe's arms: the per-depth strategies, then its train-once arms."""
        return [*self.strategies, *self.recipes[recipe]["train_once"]]

    def trained_arms(self) -> list[tuple[str, str, int]]:
        """(recipe, strategy, depth) of every arm with trainings of its own; a train-once arm
        has every depth."""
        return [(r, s, d) for r in self.recipes for s in self.recipe_strategies(r)
                for d in self.depths]

    def truncated_strategies(self, recipe: str) -> list[str]:
        return truncated_strategies(self.config, recipe)

    def truncated_arms(self) -> list[tuple[str, str, int]]:
        """(recipe, strategy, depth) of every fine-tuned-then-truncated arm: at each depth
        shallower than the deepest (there it is the per-depth model)."""
        return [(r, s, d) for r in self.recipes for s in self.truncated_strategies(r)
                for d in self.depths[:-1]]

    def truncated_recipe_arms(self) -> list[list[str]]:
        """[recipe, strategy] of every fine-tuned-then-truncated arm (the compute stage's)."""
        return [[r, s] for r in self.recipes for s in self.truncated_strategies(r)]

    def evaluated_arms(self) -> list[tuple[str, str, int]]:
        """Every arm of trained weights: the trained arms and the truncated ones."""
        return [*self.trained_arms(), *self.truncated_arms()]

    def truncation_source(self, recipe: str, strategy: str, seed) -> str:
        """The weights a fine-tuned-then-truncated arm cuts: its strategy's per-depth model
        at the deepest depth, of the same recipe and seed (that training, no other)."""
        return self.model_file(recipe, strategy, self.max_depth, seed)

    def model_file(self, recipe: str, strategy: str, depth: int, seed) -> str:
        """The weights behind an arm at a depth and seed: its own model, or (a truncated
        arm) the per-depth model it cuts."""
        folder = self.paths.MODEL_DIR.format(recipe=recipe,
                                             strategy=truncated_cut(strategy) or strategy,
                                             depth=self.model_depth(strategy, depth), seed=seed)
        return f"{folder}/model.safetensors"

    def model_depth(self, strategy: str, depth: int) -> int:
        """The trained depth behind an arm's depth: a train-once model, and the model a
        truncated arm cuts, hold the deepest."""
        return self.max_depth if strategy in TRAIN_ONCE or truncated_cut(strategy) else int(
            depth)

    def models(self) -> list[tuple[str, str, int, int]]:
        """(recipe, strategy, trained depth, seed) of every model to train: one per seed for a
        train-once arm (at the deepest depth), one per seed and depth otherwise."""
        keys = dict.fromkeys((r, s, self.model_depth(s, d), seed)
                             for r, s, d in self.trained_arms()
                             for seed in self.recipes[r]["seeds"])
        return list(keys)

    def model_files(self) -> list[str]:
        return [f"{self.paths.MODEL_DIR.format(recipe=r, strategy=s, depth=d, seed=seed)}/"
                "model.safetensors" for r, s, d, seed in self.models()]

    def summaries(self) -> list[str]:
        return [f"{self.paths.MODEL_DIR.format(recipe=r, strategy=s, depth=d, seed=seed)}/"
                "train_summary.json" for r, s, d, seed in self.models()]

    def arm_seeds(self, recipes=None, arms=None) -> list[dict]:
        """The wildcards of every trained arm's evaluation folder (of `recipes`, or all; of
        `arms`, or the trained arms)."""
        return [dict(recipe=r, strategy=s, depth=d, seed=seed)
                for r, s, d in (self.trained_arms() if arms is None else arms)
                if recipes is None or r in recipes for seed in self.recipes[r]["seeds"]]

    def trained_eval_files(self) -> list[str]:
        """The evaluations of every arm of trained weights, the truncated arms' included."""
        return [self.paths.EVAL.format(**a, benchmark=b)
                for a in self.arm_seeds(arms=self.evaluated_arms()) for b in self.benchmarks]

    def base_eval_files(self) -> list[str]:
        return [self.paths.BASE_EVAL.format(strategy=s, depth=d, benchmark=b)
                for s in self.strategies for d in self.depths for b in self.benchmarks]

    @functools.cached_property
    def dims(self) -> list[int]:
        """The embedding dimensions every evaluation also scores (eval.dims), smallest first:
        cuts of the full-dimension embeddings, from the same job and encoding."""
        return sorted(self.config["eval"].get("dims") or [])

    def dim_files(self, template: str, depths=None) -> list[str]:
        """A dimension template's (EVAL_DIM, BASE_EVAL_DIM) files of one evaluation job, in
        the order its --dim-out takes them: depth by depth (`depths`, or {depth} kept), each
        depth's dimensions smallest first."""
        return [template.replace("{depth}", str(d)).replace("{dim}", str(m))
                for d in (depths or ["{depth}"]) for m in self.dims]

    def dim_eval_files(self) -> list[str]:
        """Every evaluation's files at the configured dimensions (eval.dims)."""
        p = self.paths
        trained = [p.EVAL_DIM.format(**a, benchmark=b, dim=m)
                   for a in self.arm_seeds(arms=self.evaluated_arms()) for b in self.benchmarks
                   for m in self.dims]
        base = [p.BASE_EVAL_DIM.format(strategy=s, depth=d, benchmark=b, dim=m)
                for s in self.strategies for d in self.depths for b in self.benchmarks
                for m in self.dims]
        return trained + base

    def dims_expected_grid(self) -> str:
        """expected_grid() with the configured dimensions: what the dimension table checks
        its evaluations against."""
        return json.dumps({**json.loads(self.expected_grid()), "dims": self.dims})

    @staticmethod
    def runs_of(files) -> list[str]:
        """The run files and sidecars of per-query files (paths.run_files), file by file."""
        return [r for f in files for r in paths.run_files(f)]

    def run_files(self) -> list[str]:
        """Every evaluation's run file and its sidecar (the snapshots' files have none)."""
        return self.runs_of(self.trained_eval_files() + self.base_eval_files()
                            + self.dim_eval_files())

    def curve_eval_files(self) -> list[str]:
        """The snapshots' evaluations (steps/ files) of every arm with a learning curve."""
        return [self.paths.EVAL_STEPS.format(**a, benchmark=b)
                for a in self.arm_seeds(self.curve_recipes) if self.snapshot_steps(a["recipe"])
                for b in self.benchmarks]

    def curve_input_files(self) -> list[str]:
        """What the curves stage reads: the bases (step 0), the curve recipes' final models
        (the last step) and their snapshots."""
        final = [self.paths.EVAL.format(**a, benchmark=b)
                 for a in self.arm_seeds(self.curve_recipes) for b in self.benchmarks]
        return self.base_eval_files() + final + self.curve_eval_files()

    def evaluation_constraints(self, rule: str) -> dict[str, str]:
        """An evaluation rule's wildcard constraints (EVALUATIONS): the recipes and
        strategies it evaluates, so that exactly one rule makes each evaluation."""
        model, curve = EVALUATIONS[rule]
        if model.startswith("truncated"):
            one_pass = model == "truncated_one_pass"
            arms = [(r, s) for r, s, _ in self.truncated_arms()
                    if (truncated_cut(s) == PER_DEPTH_REFERENCE) == one_pass]
            return {"recipe": regex(dict.fromkeys(r for r, _ in arms)),
                    "strategy": regex(dict.fromkeys(s for _, s in arms)),
                    **({} if one_pass else {"depth": regex(self.depths[:-1])})}
        if model.startswith("base"):
            one_pass = model == "base_one_pass"
            return {"strategy": regex(s for s in self.strategies
                                      if (s == PER_DEPTH_REFERENCE) == one_pass)}
        recipes = [r for r in self.recipes if (r in self.curve_recipes) == curve]
        strategies = TRAIN_ONCE if model == "train_once" else self.strategies
        return {"recipe": regex(recipes), "strategy": regex(strategies)}

    def evaluation_rule(self, strategy: str, recipe: str | None = None) -> str:
        """The rule that evaluates an arm (recipe None: the base's)."""
        if truncated_cut(strategy):
            model, curve = ("truncated_one_pass" if truncated_cut(strategy) ==
                            PER_DEPTH_REFERENCE else "truncated"), False
        elif recipe is None:
            model, curve = ("base_one_pass" if strategy == PER_DEPTH_REFERENCE else "base"), False
        else:
            model = "train_once" if strategy in TRAIN_ONCE else "per_depth"
            curve = recipe in self.curve_recipes
        return next(r for r, v in EVALUATIONS.items() if v == (model, curve))

    def evaluation_jobs(self) -> list[tuple[str, list[str]]]:
        """(rule, outputs) of every evaluation job (rules/evaluate.smk): a one-pass model's
        job writes every depth's file, a curve recipe's job its snapshots' and its final
        model's; each job's run files after its per-query files (runs_of, the snapshots'
        aside)."""
        if not self.has_biencoder:
            return []

        def job(rule, files, steps=()):
            return rule, [*steps, *files, *self.runs_of(files)]

        p, jobs = self.paths, []
        for s in self.strategies:
            rule = self.evaluation_rule(s)
            for b in self.benchmarks:
                files = [p.BASE_EVAL.format(strategy=s, depth=d, benchmark=b)
                         for d in self.depths]
                dims = [self.dim_files(p.BASE_EVAL_DIM, [d]) for d in self.depths]
                dims = [[f.format(strategy=s, benchmark=b) for f in fs] for fs in dims]
                jobs += [job(rule, files + sum(dims, []))] if rule == "evaluate_base_one_pass" \
                    else [job(rule, [f, *fd]) for f, fd in zip(files, dims, strict=True)]
        for r in self.recipes:
            curve = r in self.curve_recipes
            for s in self.recipe_strategies(r):
                rule = self.evaluation_rule(s, r)
                for seed in self.recipes[r]["seeds"]:
                    for b in self.benchmarks:
                        w = dict(recipe=r, strategy=s, seed=seed, benchmark=b)
                        for depths in ([self.depths] if s in TRAIN_ONCE
                                       else [[d] for d in self.depths]):
                            final = [p.EVAL.format(**w, depth=d) for d in depths]
                            steps = [p.EVAL_STEPS.format(**w, depth=d) for d in depths]
                            dims = [f.format(**w) for f in self.dim_files(p.EVAL_DIM, depths)]
                            jobs.append(job(rule, final + dims, steps if curve else ()))
            for s in self.truncated_strategies(r):
                rule = self.evaluation_rule(s, r)
                for seed in self.recipes[r]["seeds"]:
                    for b in self.benchmarks:
                        w = dict(recipe=r, strategy=s, seed=seed, benchmark=b)
                        files = [p.EVAL.format(**w, depth=d) for d in self.depths[:-1]]
                        dims = [[f.format(**w) for f in self.dim_files(p.EVAL_DIM, [d])]
                                for d in self.depths[:-1]]
                        jobs += [job(rule, files + sum(dims, []))] if rule.endswith(
                            "one_pass") else [job(rule, [f, *fd]) for f, fd in zip(files, dims,
                                                                                   strict=True)]
        return jobs

    def expected_grid(self) -> str:
        """The grid the stats stage checks its evaluations against (core/arms.py)."""
        trained = [[r, s, d, self.recipes[r]["seeds"]] for r, s, d in self.evaluated_arms()]
        base = [[BASE, s, d, [-1]] for s in self.strategies for d in self.depths]
        return json.dumps({"benchmarks": self.benchmarks, "arms": base + trained})

    def curve_grid(self) -> str:
        """The curves the curves stage computes and checks its evaluations against."""
        curves = [[r, s, d, self.recipes[r]["seeds"], self.snapshot_steps(r),
                   self.recipes[r]["steps"]]
                  for r in self.curve_recipes for s in self.recipe_strategies(r)
                  for d in self.depths]
        return json.dumps({"benchmarks": self.benchmarks, "curves": curves})

    def latency_runs(self) -> list[str]:
        return [self.paths.LATENCY_RUN.format(r=r) for r in range(self.config["latency"]["runs"])]

    def figures(self) -> list[str]:
        """The bi-encoder figures this config draws, by name."""
        names = [f.name for f in BIENCODER_FIGURES]
        if self.budget_pair[0] == self.budget_pair[1]:  # one recipe: no budget effect
            names.remove("per_benchmark_change")
        if not self.curve_recipes:
            names.remove("learning_curves")
        if not self.dims:
            names.remove("depth_by_dim")
        return names

    def figure_files(self, name: str) -> list[str]:
        return [self.paths.FIGURE.format(name=name, fmt=f) for f in self.formats]

    def figure_inputs(self, name: str) -> dict[str, list[str]]:
        """What a figure's job reads: the statistics tables, and the latency files."""
        fig = _FIGURE[name]
        stats = [self.paths.STATS_TABLE.format(table=t) for t in fig.tables]
        latency = [self.paths.LATENCY_LADDER, self.paths.LATENCY_SUMMARY] if fig.latency else []
        return {"stats": stats, "latency": latency}

    def figure_args(self, name: str) -> str:
        """The figure stage's options beside its tables (biencoder/report/figures.py)."""
        fig = _FIGURE[name]
        args = f"--budget-order {' '.join(self.budget_order)}"
        if fig.pair:
            args += f" --pair {' '.join(self.budget_pair)}"
        if fig.latency:
            args += (f" --latency {self.paths.LATENCY_LADDER}"
                     f" --latency-summary {self.paths.LATENCY_SUMMARY}")
        return args

    def stats_tables(self) -> list[str]:
        tables = [*STATS_TABLES, *COMPUTE_TABLES, *(CURVE_TABLES if self.curve_recipes else ()),
                  *([DIMS_TABLE] if self.dims else [])]
        return [self.paths.STATS_TABLE.format(table=t) for t in tables]

    def datasets_of(self, source: str) -> list[str]:
        """The data registry's datasets of one source (docstrings, beir, ...)."""
        return [n for n, spec in self.config["datasets"].items() if spec["source"] == source]

    def data_files(self) -> list[str]:
        return [*(f for b in self.benchmarks for f in paths.beir_files(b)),
                paths.TRAIN_DATA.format(train_data=self.train_data)]

    def trec_qrels_files(self) -> list[str]:
        """Each benchmark's qrels in trec_eval's form (rules/data.smk trec_qrels)."""
        return [paths.TREC_QRELS.format(benchmark=b) for b in self.benchmarks]

    def data_cards(self) -> list[str]:
        cards = [f"{paths.BEIR_DIR.format(benchmark=b)}/{paths.DATACARD}" for b in self.benchmarks]
        return [*cards, paths.TRAIN_CARD.format(train_data=self.train_data)]

    # ---- exports (rules/export.smk) ----------------------------------------------------------
    def model_evaluations(self, recipe: str, strategy: str, depth, seed) -> list[str]:
        """Every per-query file of one trained model's weights: its own arm's and those of
        the arms that cut it (a train-once model's depths, the truncated arm's)."""
        weights = self.paths.MODEL_DIR.format(recipe=recipe, strategy=strategy, depth=depth,
                                              seed=seed) + "/model.safetensors"
        return [self.paths.EVAL.format(**a, benchmark=b)
                for a in self.arm_seeds([recipe], self.evaluated_arms())
                if str(a["seed"]) == str(seed) and self.model_file(**a) == weights
                for b in self.benchmarks]

    def export_benchmarks(self) -> str:
        """The exports' --benchmarks-json: each benchmark's data source and folder."""
        return json.dumps({b: {"source": self.config["datasets"][b]["source"],
                               "dir": paths.BEIR_DIR.format(benchmark=b)}
                           for b in self.benchmarks})

    def export_files(self) -> list[str]:
        """What `snakemake export` makes: every trained model's exported folder and every
        evaluated arm's MTEB-shaped results, per seed."""
        models = [self.paths.EXPORT_MODEL.format(recipe=r, strategy=s, depth=d, seed=seed)
                  for r, s, d, seed in self.models()]
        mteb = [self.paths.EXPORT_MTEB.format(**a)
                for a in self.arm_seeds(arms=self.evaluated_arms())]
        return [*models, *mteb]

    # ---- the ladder ------------------------------------------------------------------------
    @property
    def ladder(self) -> dict:
        return self.config["ladder"]

    @functools.cached_property
    def ladder_archs(self) -> dict[str, dict]:
        return {c["name"]: c for c in self.ladder["configs"]}  # names: unique (configcheck)

    @property
    def ladder_data(self) -> str:
        return paths.LADDER_DATA.format(dataset=self.ladder["dataset"]["name"])

    def ladder_run_keys(self) -> list[dict]:
        """The wildcards of every ladder run: (config, method, k, seed), k = 0..L."""
        return [dict(arch=a, method=m, k=k, seed=s) for a, c in self.ladder_archs.items()
                for m in self.ladder["methods"] for k in range(c["L"] + 1)
                for s in self.ladder["seeds"]]

    def ladder_runs(self, k=None) -> list[str]:
        return [self.paths.LADDER_RUN.format(**w) for w in self.ladder_run_keys()
                if k is None or w["k"] == k]

    def ladder_standalone(self) -> list[str]:
        """The cross-check's standalone runs (all blocks frozen, or none), if configured."""
        if not self.ladder["crosscheck"]:
            return []
        return [self.paths.LADDER_STANDALONE.format(arch=a, kind=kind, seed=s)
                for a in self.ladder_archs for kind in KINDS for s in self.ladder["seeds"]]

    def ladder_figures(self) -> list[str]:
        return [self.paths.FIGURE.format(name="depth_ladder", fmt=f) for f in self.formats]

    def ladder_outputs(self) -> list[str]:
        return [*(self.paths.LADDER_TABLE.format(table=t) for t in paths.LADDER_TABLES),
                self.paths.LADDER_IDENTITY, *self.ladder_figures(), self.paths.LADDER_SUMMARY]

    # ---- claims ----------------------------------------------------------------------------
    def claim_figures(self) -> list[str]:
        return [self.paths.FIGURE.format(name="claims", fmt=f) for f in self.formats]

    def claim_outputs(self) -> list[str]:
        adaptive = self.config.get("adaptive_seeds") and self.has_biencoder
        looks = [self.paths.LOOKS_TABLE] if adaptive else []
        return [self.paths.CLAIMS_TABLE, self.paths.CLAIMS_MD, *self.claim_figures(), *looks]

    def claims_grid(self, layers: int = 0) -> dict:
        return claims_grid(self.config, layers=layers)

    # ---- what a run promises ---------------------------------------------------------------
    def biencoder_outputs(self) -> list[str]:
        return [self.paths.RESULTS, *(f for n in self.figures() for f in self.figure_files(n))]

    def promised(self) -> list[str]:
        """Every artifact the study promises (rule all's targets): the report and figures, and
        also what they are made from (per-query evaluations, statistics tables, latency runs,
        ladder runs, claims), so that a missing one is rebuilt by the next plain run and the
        aggregates after it with it, never left silently absent."""
        out = []
        if self.has_biencoder:
            out += [*self.trained_eval_files(), *self.base_eval_files(),
                    *(self.curve_eval_files() if self.curve_recipes else []),
                    *self.dim_eval_files(), *self.run_files(), *self.trec_qrels_files(),
                    *self.stats_tables(), *self.latency_runs(), self.paths.LATENCY_SUMMARY,
                    self.paths.LATENCY_COHERENCE, self.paths.LATENCY_LADDER, self.paths.USAGE,
                    *self.biencoder_outputs()]
        if self.has_ladder:
            out += [*self.ladder_runs(), *self.ladder_standalone(), *self.ladder_outputs()]
        if self.has_claims:
            out += self.claim_outputs()
        return list(dict.fromkeys(out))

    def measured(self) -> list[str]:
        """Every job's first output but the usage table's and the report's (looks aside: the
        looks plan theirs at run time): what the usage table sums (core/usage.py)."""
        out = [p for p in self.promised() if p not in (self.paths.USAGE, self.paths.RESULTS)]
        if self.has_biencoder:
            out += [*self.model_files(), *self.data_files()]
        if self.has_ladder:
            out.append(self.ladder_data)
        return list(dict.fromkeys(out))


def _schema_default(key: str):
    from workflow_scripts.core.settings import schema_node  # yaml: only where a default is read

    return schema_node(key)[0]["default"]


def truncated_strategies(config: dict, recipe: str) -> list[str]:
    """A recipe's fine-tuned-then-truncated arms (its key `truncated`, the schema's default
    where a partial config lacks it): one per layer-dropping strategy of the config, where
    the grid has a depth shallower than its deepest."""
    spec = config["recipes"].get(recipe, {})
    on = spec["truncated"] if "truncated" in spec else _schema_default("recipes.*.truncated")
    if not on or len(set(config["depths"])) < 2:
        return []
    return [TRUNCATED[s] for s in config["strategies"] if s in TRUNCATED]


def claims_grid(config: dict, metrics=METRICS, ladder_methods=METHODS, layers: int = 0) -> dict:
    """The arms a config produces, in the config's order (claims/grid.py's Grid as a dict);
    the untrained base is the recipe `base`. Works on a partial config (tests, the claims
    CLI): a key it lacks takes the schema's default. layers: the base model's layer count
    where known (0: not known). settings: the values that decide a claim besides its arms
    (core/deciding_keys.py `config_values`), recorded when it is registered."""
    from workflow_scripts.core.deciding_keys import config_values

    bi = lat = curves = None
    benchmarks, datasets, seeds, runs, curve_metric = [], [], {}, 0, ""
    if "recipes" in config:
        recipes = config["recipes"]
        seeds = {r: list(spec["seeds"]) for r, spec in recipes.items()}
        runs = int(config.get("latency", {}).get("runs") or _schema_default("latency.runs"))
        depths = sorted(config["depths"])
        bi = [{"recipe": r, "strategy": s, "depth": d} for r in [BASE, *recipes]
              for s in [*config["strategies"], *recipes.get(r, {}).get("train_once", [])]
              for d in depths]
        lat = [{"depth": d} for d in depths]
        benchmarks = list(config["benchmarks"])
        datasets = list(config.get("datasets", {}))
        with_curve = [r for r, spec in recipes.items() if spec.get("eval_steps")]
        curves = [a for a in bi if a["recipe"] in with_curve] or None
        # The truncated arms have no learning curve: their weights are one final model's.
        bi += [{"recipe": r, "strategy": s, "depth": d} for r in recipes
               for s in truncated_strategies(config, r) for d in depths[:-1]]
        curve_metric = config.get("stats", {}).get("metric", metrics[0])
    lad, ladder_seeds = None, []
    if "ladder" in config:
        methods = [m for m in ladder_methods if m in config["ladder"]["methods"]]
        lad = [{"config": c["name"], "method": m, "k": k} for c in config["ladder"]["configs"]
               for m in methods for k in range(c["L"] + 1)]
        ladder_seeds = list(config["ladder"]["seeds"])
    return {"biencoder": bi, "benchmarks": benchmarks, "metrics": list(metrics), "ladder": lad,
            "latency": lat, "recipe_seeds": seeds, "ladder_seeds": ladder_seeds,
            "latency_runs": runs, "curves": curves, "curve_metric": curve_metric,
            "datasets": datasets, "layers": int(layers or 0),
            "dims": sorted(int(m) for m in (config.get("eval") or {}).get("dims") or []),
            "settings": config_values(config)}


__all__ = ["BIENCODER_FIGURES", "EVALUATIONS", "PER_DEPTH_REFERENCE", "Figure", "StudyPlan",
           "claims_grid", "regex"]
