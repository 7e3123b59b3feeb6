"""Fuzz the JSON API with schemathesis against its own OpenAPI schema: no input may cause a
server error (5xx), and every response must match the schema the app publishes.

Bounded so that it runs in well under a minute: a fixed number of examples per operation,
the explicit examples of each request model first, then generated ones (valid and invalid).
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

from gpuplan.web import create_app  # noqa: E402

EXAMPLES_PER_OPERATION = 24  # 40 until the tenth session; cut to keep CI under 10 minutes (the hostile waves'
# own door tests, tests/test_hostile_*.py, carry the broader sweeps)
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())
CALLS: dict[str, int] = {}


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
def test_api_has_no_server_errors(case):
    CALLS[case.operation.label] = CALLS.get(case.operation.label, 0) + 1
    case.call_and_validate(checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                                   response_schema_conformance])


def test_every_operation_was_fuzzed():
    """Runs after the fuzz (file order): each operation with inputs got many examples."""
    labels = [op.ok().label for op in schema.get_all_operations()]
    print("\nschemathesis examples per operation:", CALLS)
    assert set(CALLS) == set(labels)
    assert all(CALLS[label] >= 20 for label in labels if "health" not in label), CALLS
