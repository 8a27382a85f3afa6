"""Running and recording experiments: the runner that executes a notebook spec with papermill and
logs it to MLflow (`runner`) and the spec it runs (`spec`), the tracking store checked before use
(`store`), lanes run side by side (`schedule`), what a notebook hands it (`recorder`), the
reviewer's HTML reports (`reports`) and promotion of a tuned config to
`experiments/production.yaml` with its report (the `promote` package). Layer rule: may import
every layer from `citegate.studies` down; only the CLI sits above it.
"""
