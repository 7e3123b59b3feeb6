"""Which GPU type infer's --price is for when --rps sizes over the catalog (hostile wave 16, helper X4): the sizing
priced every catalog type at the one --price given (`infer --rps 1 --gpu h100 --price 2` answered 'cheapest on any
GPU type: 1 x A100 40GB PCIe, $2.00/h'), where the search without --rps prices the other types from the catalog
(jobs.inference.alternatives). The price is now the GPU asked's (jobs.inference.sizing.asked_price), and --rps with
--price but no --gpu is refused here: there is no asked type for it to be."""

from __future__ import annotations

from gpuplan.errors import InputError


def check_price_asked(rps: float | None, price: float | None, given: frozenset[str]) -> None:
    """InputError naming ``price`` (USD per GPU-hour) where --rps sizes every catalog GPU type and no --gpu says
    which type the price is for (with --gpu left out it applied to the default's A100 type, unsaid)."""
    if rps is not None and price is not None and "gpu" not in given:
        raise InputError("price", price, "is one GPU type's, and --rps without --gpu sizes every catalog GPU type at "
                         "its catalog price: give --gpu with --price (or drop --price)")
