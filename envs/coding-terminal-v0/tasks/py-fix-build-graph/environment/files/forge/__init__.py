"""forge: a small incremental build tool (see README.md)."""
from .errors import ForgeError, ParseError, CycleError
from .graph import Graph, Target
from .parser import parse
from .planner import plan
from .state import fingerprint, load_state, save_state
from .builder import Builder

__all__ = ["ForgeError", "ParseError", "CycleError", "Graph", "Target", "parse", "plan",
           "fingerprint", "load_state", "save_state", "Builder"]
