"""Exact linear solves over ``Fraction`` for the tests that compare computed values with
exact ones."""

from fractions import Fraction


def solve_fractions(M, b):
    """The solution of ``M x = b`` over ``Fraction`` (``M`` a list of rows, ``b`` a list), by
    Gaussian elimination without pivoting (``M``'s leading minors must not vanish: true of
    the diagonally dominant systems of absorbing chains). ``M`` and ``b`` are overwritten."""
    n = len(b)
    for k in range(n):
        for r in range(k + 1, n):
            if M[r][k]:
                f = M[r][k] / M[k][k]
                M[r] = [a - f * m for a, m in zip(M[r], M[k])]
                b[r] -= f * b[k]
    x = [Fraction(0)] * n
    for k in range(n - 1, -1, -1):
        x[k] = (b[k] - sum(M[k][j] * x[j] for j in range(k + 1, n))) / M[k][k]
    return x
