"""The load engine seen from the lab: how to run it (process.py) and what it returns
(result.py, one typed value read by everything downstream)."""

from stackbench.engine.process import SCHEMA_PATH, SCHEMA_VERSION, LoadSpec, binary, run, version
from stackbench.engine.result import Caveat, EngineResult

__all__ = ["SCHEMA_PATH", "SCHEMA_VERSION", "LoadSpec", "binary", "run", "version", "Caveat", "EngineResult"]
