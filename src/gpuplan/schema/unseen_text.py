"""Characters a name (schema.types.name: a catalog name, a Hugging Face id, a path, a filter) may not hold."""

from __future__ import annotations

import unicodedata

UNSEEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")
"""Unicode categories a name may not hold (wave 20): controls (C0, DEL and the C1 range U+0080-U+009F, which the
ASCII test let through), format characters (the bidirectional overrides and isolates U+202A-U+202E / U+2066-U+2069
of CVE-2021-42574 'Trojan Source', zero-width spaces and joiners, the BOM) and the line / paragraph separators: each
reorders or hides what a terminal or the web page shows of the text, and no catalog name or id holds one
(`catalog --filter 'llama\\u202e'` listed 0 models, exit 0)."""


REFUSAL = ("must not contain control characters (a newline, a tab, a bidirectional override or zero-width character, "
           "...)")
"""What a refusal of text holding one says (schema.types.name, schema.batch_ramp_field's text past MAX_TEXT)."""


def unseen(char: str) -> bool:
    """Whether ``char`` is of UNSEEN_CATEGORIES."""
    return unicodedata.category(char) in UNSEEN_CATEGORIES
