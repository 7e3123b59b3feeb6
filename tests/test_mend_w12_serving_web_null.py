"""Mender MB (wave 12, review R3 S4): a null under a key the schema does not have is an unknown field, not a
'leave the key out for the default' (which told the user foo has a default); a null under a real field is still
refused as before (web/body._check_no_nulls)."""

import pytest

pytest.importorskip("fastapi")  # the web extra; conftest's module-scoped ``client`` serves the app


def test_an_unknown_key_given_null_is_an_unknown_field(client):
    r = client.post("/api/budget", json={"model": "llama-3-8b", "foo": None})
    assert r.status_code == 422 and r.json()["field"] == "foo"
    assert "unknown field; valid fields:" in r.json()["message"] and "default" not in r.json()["message"]


def test_a_known_field_given_null_is_still_refused(client):
    r = client.post("/api/budget", json={"model": "llama-3-8b", "days": None})
    assert r.status_code == 422 and r.json()["message"] == ("days: got 'null'; give a value, or leave the key out "
                                                           "for the default")
