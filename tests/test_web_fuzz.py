"""Fuzz the JSON API with schemathesis against its own OpenAPI schema: no input may cause a
server error (5xx), and every response must match the schema the app publishes.

Bounded so that it runs in well under a minute: a fixed number of examples per operation,
the explicit examples of each request model first, then generated ones (valid and invalid).

Schemathesis' coverage phase (which max_examples does not limit) sends each optional field alone at its schema
default ("Object with all required properties and 'storage'"): 51 of the ~880 /api/plan cases are answered 200, yet
they parse to only 4 distinct PlanInputs, and each full plan search took ~0.4 s (~20 s of the file's ~39 s on 2
cores). So each job's estimate is memoised on its parsed inputs for this module (``_estimates_once``): every case
still travels the whole request path (body reading, the schema, the bounds, translation, charts, the response
schema check), and each distinct input still runs the real estimate once. Measured on 2 cores: 37.9 -> 17.2 s CPU;
a plan_report raising on sequence_parallel still fails the fuzz.
"""

import pytest

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from gpuplan.jobs import JOBS  # noqa: E402
from gpuplan.web import create_app  # noqa: E402

EXAMPLES_PER_OPERATION = 24  # 40 until the tenth session; cut to keep CI under 10 minutes (the hostile waves'
# own door tests, tests/test_hostile_*.py, carry the broader sweeps)
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())
CALLS: dict[str, int] = {}
ESTIMATES: dict[str, list[int]] = {}  # job -> [estimates computed, answered from the memo]
MEMOISED = {name: job.estimate_path.split(":") for name, job in JOBS.items()}
"""The estimate functions the web service calls, by job: (module, attribute) of gpuplan.jobs.JOBS' estimate_path
(web/service._report imports plan_report, JOBS' plan estimate, from its module at call time)."""
MEMOISED["campaign"] = ["gpuplan.jobs.campaign.estimate", "stage_report"]
"""POST /api/campaign, the one POST route that is not a job: each stage's budget (jobs/campaign/estimate.py stage_report,
looked up at call time by estimate_campaign), counted under 'campaign' (a stage holds its raw fields as a read-only
mapping, unhashable: computed every time)."""


def _memo(job: str, estimate):
    """``estimate`` computed once per distinct parsed inputs (a frozen pydantic model: equal fields, equal inputs);
    inputs that cannot be hashed (a calibration document) are computed every time. The Report is a frozen
    dataclass, read (translated, charted) but never changed by the service."""
    kept: dict = {}

    def once(inputs, *args):
        counts = ESTIMATES.setdefault(job, [0, 0])
        try:
            hash(inputs)
        except TypeError:
            counts[0] += 1
            return estimate(inputs, *args)
        if inputs not in kept:
            counts[0] += 1
            kept[inputs] = estimate(inputs, *args)
        else:
            counts[1] += 1
        return kept[inputs]

    return once


@pytest.fixture(scope="module", autouse=True)
def _estimates_once():
    import importlib

    with pytest.MonkeyPatch.context() as patch:
        for job, (module, name) in MEMOISED.items():
            target = importlib.import_module(module)
            patch.setattr(target, name, _memo(job, getattr(target, name)))
        yield


@pytest.fixture(autouse=True)
def _each_operation_fuzzed_enough(request):
    """After each operation's fuzz item: it got many examples, and a job's route ran its real estimate at least once.

    Checked per item, not in a closing test that reads the other items' counts: under pytest-xdist the items run on
    several workers (separate processes), so a closing test saw only its own worker's counts (CI stop 55 on a
    4-worker host: none). schemathesis' items carry their operation (``operation_label``, e.g. 'POST /api/plan')."""
    label = getattr(request.node, "operation_label", None)
    job = label.split("/api/", 1)[1] if label and label.startswith("POST /api/") else None
    calls_before = CALLS.get(label, 0)
    computed_before = ESTIMATES.get(job, [0, 0])[0]
    yield
    if label is None:
        return
    examples = CALLS.get(label, 0) - calls_before
    print(f"\nschemathesis examples for {label}: {examples}; estimates computed, answered from the memo: {ESTIMATES}")
    assert examples >= (1 if "health" in label else 20), (label, examples)
    if job is not None:
        assert job in MEMOISED, (label, sorted(MEMOISED))  # every POST route is a job whose estimate is memoised
        assert ESTIMATES.get(job, [0, 0])[0] > computed_before, (label, ESTIMATES)  # the real estimate ran


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
def test_api_has_no_server_errors(case):
    CALLS[case.operation.label] = CALLS.get(case.operation.label, 0) + 1
    case.call_and_validate(checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                                   response_schema_conformance])


def test_every_job_has_a_fuzzed_route():
    """Each job of gpuplan.jobs.JOBS is served at POST /api/<job> and so fuzzed above (its own item, checked by
    _each_operation_fuzzed_enough), next to the read-only GET routes."""
    labels = {op.ok().label for op in schema.get_all_operations()}
    assert {f"POST /api/{job}" for job in JOBS} <= labels, sorted(labels)
    assert {"GET /api/health", "GET /api/catalog/models", "GET /api/catalog/gpus"} <= labels, sorted(labels)
