"""PostgreSQL: the embedded server or `DATABASE_URL`, connections and versioned migrations (`db`,
`migrations/*.sql`), writing fragments and reading corpus statistics (`tables`), the all-or-nothing
corpus ingest (`ingest`) and the production config as a service loads it, checked against the
database's embedder (`production`). Layer rule: may import `citegate.core`, `citegate.evaluation`,
`citegate.corpus` and `citegate.models` (ingest reads sources and embeds them); it never imports the
pipeline or anything above.
"""

from citegate.store.production import load_production_config

__all__ = ["load_production_config"]
