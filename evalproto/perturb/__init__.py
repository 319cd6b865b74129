"""Perturbed copies of a dataset's examples, as Dynabench makes them for its fairness and
robustness metrics: AugLy's text transforms (`transforms`), the gendered first names they
swap (`names`), the entities they leave alone (`entities`), and the copies of the rows
(`examples`). AugLy is the `perturb` extra and is imported only when a dataset is
perturbed."""
