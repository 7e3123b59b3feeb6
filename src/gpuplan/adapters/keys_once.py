"""The one reader of JSON text's repeated keys for the two doors that read JSON text into a job's fields: the web API's
body (web.body.read_body) and a Python caller's ``JobInputs.model_validate_json`` (schema.base). json.loads keeps
the last of a key given twice (``{"gpus": 8, "gpus": 16}`` read as 16); both doors refuse it instead, naming the
field when the outermost object repeats it. A file's JSON has its own stricter hook (adapters.files._no_duplicates:
refused at the first repeat, naming the file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplan.errors import InputError


def _whole(key: str, limit: int | None = None) -> str:
    return key


class KeysOnce:
    """A json object_pairs_hook that keeps each object's pairs and notes the keys it saw twice, by object: nested
    objects close first, so the last object closed is the outermost one (the body, the inputs)."""

    def __init__(self) -> None:
        self.objects = 0
        self.twice: list[tuple[int, str]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                self.twice.append((self.objects, key))
            out[key] = value
        self.objects += 1
        return out

    def check(self, whole: str, said: str, cut: Callable[..., str] | None = None) -> None:
        """Refuse a repeated key: one of the outermost object named as the field ('is given more than once in
        ``said``'), else the first one inside a value named as ``whole`` (the body, the inputs). ``cut(key, limit)``
        shortens a key quoted back (web.body.preview; None: as given); the field's name is cut at its default."""
        cut = cut or _whole
        for index, key in self.twice:
            if index == self.objects - 1:
                raise InputError(cut(key), "twice", f"is given more than once in {said}; give each field once")
        if self.twice:
            raise InputError(whole, f"key {cut(self.twice[0][1], 40)!r} twice", "a JSON object gives each key once "
                             "(at every level, a pasted config included)")
