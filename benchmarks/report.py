"""How every benchmark prints its numbers: aligned `key  value` lines, or one JSON object."""

from __future__ import annotations

import json
from collections.abc import Mapping


def print_numbers(numbers: Mapping[str, object], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(dict(numbers)))
        return
    width = max(len(key) for key in numbers)
    for key, value in numbers.items():
        print(f"{key:<{width}}  {value}")
