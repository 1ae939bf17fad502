"""Argument checks shared by every public function.

Each check either returns the normalised value or raises a subclass of
:class:`ValueError` whose message names the argument, the expected form and
what was given.
"""

from .scalars import (
    check_real,
    check_int,
    make_rng,
    INT64_MAX,
    check_call_budget,
    exact_sum,
)
from .arrays import (
    as_float_array,
    check_costs,
    check_dense_size,
    check_policy,
    check_real_dtype,
    check_int64_array,
    check_sparse_structure,
)
from .counts import (
    csr_position,
    check_csr_counts,
    largest_count,
    dense_count_array,
    check_dense_values,
    check_dense_counts,
    check_log_term,
    check_counts_log_term,
)
