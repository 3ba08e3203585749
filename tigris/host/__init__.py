"""The host runtime: runtime_c built with cffi (``build``) and a Session that runs a plan (``session``)."""
from tigris.host.session import IOSpec, PlanError, RunResult, Session

__all__ = ["IOSpec", "PlanError", "RunResult", "Session"]
