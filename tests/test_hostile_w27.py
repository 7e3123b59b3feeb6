"""Hostile inputs, wave 27 (helper HX, session 24): each case is refused in one line naming the field, exit
status 2, at every door that takes it, with nothing started and nothing half-written."""

from __future__ import annotations

import pytest
from helpers import field_refusal

# ---- 1. serve --port: a TCP port is written in decimal digits ----------------------------------------------------


@pytest.fixture
def no_server(monkeypatch):
    """`serve` with uvicorn.run and the bind probe stubbed: a port accepted is recorded, never served on."""
    uvicorn = pytest.importorskip("uvicorn")
    import gpuplan.commands.serve as serve

    started = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.append(kw["port"]))
    monkeypatch.setattr(serve, "check_port_free", lambda host, port: None)
    monkeypatch.setenv("GPUPLAN_ALLOWED_HOSTS", "")
    return started


@pytest.mark.parametrize("port", ["1e3", "1000.0", "8e3", "+80", "00080", "0x50", "1_000", "true", "8080.5"])
def test_serve_port_in_another_form_than_digits_is_refused(run_cli, no_server, port):
    """'1e3' and '1000.0' were read as a count (schema.types.number) and served on port 1000, '+80' and '00080'
    on 80 (a leading zero is octal to other tools)."""
    field_refusal(run_cli("serve", "--port", port), "port", "in decimal digits, e.g. 8000")
    assert no_server == []


@pytest.mark.parametrize("port", ["0", "-1", "65536", "70000", "99999999999999999999"])
def test_serve_port_out_of_range_is_refused_with_its_bounds(run_cli, no_server, port):
    field_refusal(run_cli("serve", "--port", port), "port", "must be >= 1 and <= 65535")
    assert no_server == []


@pytest.mark.parametrize("port", ["1", "8000", " 8080 ", "65535"])
def test_serve_port_in_digits_is_served_on(run_cli, no_server, port):
    code, _, err = run_cli("serve", "--port", port)
    assert code == 0 and no_server == [int(port)], err


@pytest.mark.parametrize("port", [8000.0, True, [8000], "1e3"])
def test_serve_schema_refuses_a_port_not_an_int_in_python(port):
    """The schema's own door (ServeInputs): a float or a bool is no port (True was port 1, 8000.0 port 8000)."""
    from gpuplan import InputError
    from gpuplan.commands.serve import serve_schema

    with pytest.raises(InputError) as caught:
        serve_schema()(port=port)
    assert caught.value.field == "port" and "decimal digits" in caught.value.expected
