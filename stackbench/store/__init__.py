"""The results store (SQLite): db.py reads and writes, rows.py maps what it reads onto
the model's types (stackbench/model/), schema.py is the current schema, migrations.py
brings older stores up to it."""

from stackbench.store.db import Store
from stackbench.store.schema import VERSION as SCHEMA_VERSION

__all__ = ["Store", "SCHEMA_VERSION"]
