"""Scale-out: identification, excitation design and calibration jobs on a local process pool or on
Ray, calling the identification and calibration library functions (it sits above both). See
docs/scaling.md.

- ``jobs``        the job specification, the result format, retry policy, ledger, result store
- ``tasks``       what a worker runs for each job kind
- ``executors``   LocalExecutor (default), RayExecutor, InlineExecutor, make_executor
- ``excitation``  multi-start excitation design, one job per start
- ``batch``       identification / calibration batches, DistributedFitness for metaheuristics
"""

from .batch import DistributedFitness, calibrate_job, identify_job, run_batch
from .executors import InlineExecutor, LocalExecutor, RayExecutor, make_executor
from .jobs import JobResult, JobSpec, Ref, ResultStore, RetryPolicy

__all__ = ["DistributedFitness", "InlineExecutor", "JobResult", "JobSpec", "LocalExecutor", "RayExecutor", "Ref",
           "ResultStore", "RetryPolicy", "calibrate_job", "identify_job", "make_executor", "run_batch"]
