"""The statistics library: intervals, tests and planning over seeds x examples, and the
group-sequential levels of seeds on demand. It imports numpy, scipy and itself only (no
module of the workflow), so it works in a notebook: docs/statistics.md (what its numbers mean),
docs/methods.md (the method and its validation), docs/multibootstrap.md.

The public modules, each the one import path of its functions:
  intervals       the front the stats stages and the claims call: `mean`, `compare`,
                  `equivalence`, `seeds_needed`, `seeds_to_settle`, `axes_for`, by
                  interval method; `alpha_of` / `ci_of`, a CI level's one-sided alpha
  design          how two arms are compared (`choose`: paired, unpaired, single-baseline,
                  the fixed side, the axes, borrowing) and a one-seed arm's borrowed terms
                  (`borrowed_pool`, the compared arms left out)
  calibrated      the calibrated interval for few seeds (default): `mean_interval`,
                  `compare`, `equivalence`, `half_width`
  variance_terms  the mean squares of its variance (`Term`, `variance_terms`), the
                  textbook `satterthwaite` and `welch`, `variance_components`,
                  `arm_example_variance`
  df_rule         the calibrated variance estimate and df from the mean squares,
                  vectorised: `DfRule`, `DEFAULT_RULE`, `variance_and_df`
  tail_calibration  the p-value's tail calibration: `calibrated_p`, `calibrated_level`
  multibootstrap  the Multi-Bootstrap (the reference): `bootstrap_mean`, `compare`,
                  `equivalence`, `variance_parts`, `seeds_needed`, `instance_agreement`
  seed_planning   seeds for a half-width, a margin or a difference (the calibrated t)
  borrowed_seeds  a one-seed arm's seed terms, borrowed from the multi-seed arms
  look_plan       the seed counts of the looks (`plan_looks`; pure Python: the config check
                  imports it when the Snakefile is parsed)
  sequential      each look's level (`look_alphas`, `boundaries`, `spent`)
Behind them: bootstrap_inputs (the shared input checks, arms) and bootstrap_engine (the
vectorized bootstrap).

Nothing is re-exported here: a name here would be a second import path of its function, and
importing this package must stay free of numpy (look_plan is imported at parse time).
"""
