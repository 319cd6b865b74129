"""evalproto's public Python API, by subject: `scoring` (load a metric, score and compare
systems), `statsfiles`, `lm`, `report`, `cluster` and `metaeval` (metrics against
human judgements). The package's own __init__
(`evalproto.load`, ...) imports each name on first use, so that a command loads only
the modules of its subject: corpus-score never pays for the report or Dask."""
