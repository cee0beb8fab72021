"""The kernel under test: tanh(A @ B), in two variants with the same result.

- `fast`: one XLA dot.
- `slow`: the product summed as n rank-1 updates in a `lax.fori_loop`, several times slower.

Change `VARIANT` to "slow" and `kgate check` fails on a regression.
"""

import jax
import jax.numpy as jnp
from jax import lax

VARIANT = "fast"


def matmul_tanh_fast(a, b):
    return jnp.tanh(a @ b)


def matmul_tanh_slow(a, b):
    def step(k, acc):
        column = lax.dynamic_index_in_dim(a, k, axis=1, keepdims=False)
        row = lax.dynamic_index_in_dim(b, k, axis=0, keepdims=False)
        return acc + jnp.outer(column, row)

    zero = jnp.zeros((a.shape[0], b.shape[1]), a.dtype)
    return jnp.tanh(lax.fori_loop(0, a.shape[1], step, zero))


VARIANTS = {"fast": matmul_tanh_fast, "slow": matmul_tanh_slow}

matmul_tanh = jax.jit(VARIANTS[VARIANT])
