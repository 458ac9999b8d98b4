"""Practice exercises of chapter 6: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention import causal_mask, softmax
from attention.practice.ch06 import (check_dv_and_dq,
                                     check_fixed_backward,
                                     check_numerical_gradient,
                                     check_softmax_vjp)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def softmax_vjp(g, p):
    """∂L/∂s from g = ∂L/∂p, for p = softmax(s) along the last axis,
    without forming the Jacobian diag(p) - p pᵀ."""
    # Your code: this is only the diagonal part, diag(p) g.
    return p * g
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def softmax_vjp(g, p):
    """∂L/∂s from g = ∂L/∂p, for p = softmax(s) along the last axis,
    without forming the Jacobian diag(p) - p pᵀ."""
    row_dot = np.sum(g * p, axis=-1, keepdims=True)  # g·p, one number per row
    return p * (g - row_dot)
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-plain-sum]
# rejected with: plain sum of g
def softmax_vjp(g, p):
    return p * (g - g.sum(axis=-1, keepdims=True))
# --8<-- [end:ex1-wrong-plain-sum]


# --8<-- [start:ex1-wrong-columns]
# rejected with: along each row
def softmax_vjp(g, p):
    return p * (g - np.sum(g * p, axis=0, keepdims=True))
# --8<-- [end:ex1-wrong-columns]


# --8<-- [start:ex1-wrong-no-p]
# rejected with: multiply (g - g·p) by p
def softmax_vjp(g, p):
    return g - np.sum(g * p, axis=-1, keepdims=True)
# --8<-- [end:ex1-wrong-no-p]


# --8<-- [start:ex2-starter]
def dv_and_dq(d_out, q, k, v):
    """(dV, dQ) of O = softmax(Q Kᵀ / √d) V for one head, given dO (no mask)."""
    d = q.shape[-1]
    p = softmax(q @ k.T / math.sqrt(d))  # (n_q, n_k), the forward's weights
    # Your code: dV, then dP, dS and dQ.
    dv = np.zeros_like(v)  # (n_k, d_v)
    dq = np.zeros_like(q)  # (n_q, d)
    return dv, dq
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def dv_and_dq(d_out, q, k, v):
    """(dV, dQ) of O = softmax(Q Kᵀ / √d) V for one head, given dO (no mask)."""
    d = q.shape[-1]
    p = softmax(q @ k.T / math.sqrt(d))  # (n_q, n_k), the forward's weights
    dv = p.T @ d_out  # (n_k, d_v): O = P V
    dp = d_out @ v.T  # (n_q, n_k): O = P V
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))  # the softmax
    dq = ds @ k / math.sqrt(d)  # (n_q, d): S = Q Kᵀ / √d
    return dv, dq
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-no-scale]
# rejected with: too large
def dv_and_dq(d_out, q, k, v):
    p = softmax(q @ k.T / math.sqrt(q.shape[-1]))
    dp = d_out @ v.T
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    return p.T @ d_out, ds @ k
# --8<-- [end:ex2-wrong-no-scale]


# --8<-- [start:ex2-wrong-no-softmax-correction]
# rejected with: softmax's correction
def dv_and_dq(d_out, q, k, v):
    p = softmax(q @ k.T / math.sqrt(q.shape[-1]))
    ds = p * (d_out @ v.T)
    return p.T @ d_out, ds @ k / math.sqrt(q.shape[-1])
# --8<-- [end:ex2-wrong-no-softmax-correction]


# --8<-- [start:ex2-wrong-untransposed-weights]
# rejected with: raised ValueError
def dv_and_dq(d_out, q, k, v):
    p = softmax(q @ k.T / math.sqrt(q.shape[-1]))
    dp = d_out @ v.T
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    return p @ d_out, ds @ k / math.sqrt(q.shape[-1])
# --8<-- [end:ex2-wrong-untransposed-weights]


# --8<-- [start:ex3-starter]
def numerical_gradient(f, x, h=1e-6):
    """∂f/∂x by central differences, one entry at a time; f(x) is a number."""
    grad = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        # Your code: evaluate f with entry i at old + h and at old - h,
        # restore it, and set grad.flat[i].
    return grad
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def numerical_gradient(f, x, h=1e-6):
    """∂f/∂x by central differences, one entry at a time; f(x) is a number."""
    grad = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + h
        f_plus = f(x)
        x.flat[i] = old - h
        f_minus = f(x)
        x.flat[i] = old  # restore, or every later entry is measured elsewhere
        grad.flat[i] = (f_plus - f_minus) / (2 * h)
    return grad
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-one-sided]
# rejected with: one-sided difference
def numerical_gradient(f, x, h=1e-6):
    grad = np.zeros_like(x)
    f_x = f(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + h
        grad.flat[i] = (f(x) - f_x) / h
        x.flat[i] = old
    return grad
# --8<-- [end:ex3-wrong-one-sided]


# --8<-- [start:ex3-wrong-divides-by-h]
# rejected with: 2h apart
def numerical_gradient(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + h
        f_plus = f(x)
        x.flat[i] = old - h
        f_minus = f(x)
        x.flat[i] = old
        grad.flat[i] = (f_plus - f_minus) / h
    return grad
# --8<-- [end:ex3-wrong-divides-by-h]


# --8<-- [start:ex3-wrong-no-restore]
# rejected with: restore each entry
def numerical_gradient(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for i in range(x.size):
        x.flat[i] += h
        f_plus = f(x)
        x.flat[i] -= 2 * h
        f_minus = f(x)
        grad.flat[i] = (f_plus - f_minus) / (2 * h)
    return grad
# --8<-- [end:ex3-wrong-no-restore]


# --8<-- [start:ex4-starter]
def causal_attention_backward(d_out, q, k, v):
    """(dQ, dK, dV) of causal self-attention, O = softmax(mask(Q Kᵀ / √d)) V.
    One line is wrong: find it with the check (or a gradient check)."""
    n, d = q.shape
    s = q @ k.T / math.sqrt(d)  # (n, n)
    p = softmax(np.where(causal_mask(n), s, -np.inf))  # (n, n), causal
    dv = p.T @ d_out  # (n, d_v)
    dp = d_out @ v.T  # (n, n)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))  # (n, n)
    dq = ds @ k / math.sqrt(d)  # (n, d)
    dk = ds @ q / math.sqrt(d)  # (n, d)
    return dq, dk, dv
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def causal_attention_backward(d_out, q, k, v):
    """(dQ, dK, dV) of causal self-attention, O = softmax(mask(Q Kᵀ / √d)) V.
    One line is wrong: find it with the check (or a gradient check)."""
    n, d = q.shape
    s = q @ k.T / math.sqrt(d)  # (n, n)
    p = softmax(np.where(causal_mask(n), s, -np.inf))  # (n, n), causal
    dv = p.T @ d_out  # (n, d_v)
    dp = d_out @ v.T  # (n, n)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))  # (n, n)
    dq = ds @ k / math.sqrt(d)  # (n, d)
    dk = ds.T @ q / math.sqrt(d)  # (n, d): key j collects column j of dS
    return dq, dk, dv
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-keys-for-queries]
# rejected with: dk is wrong
def causal_attention_backward(d_out, q, k, v):
    n, d = q.shape
    p = softmax(np.where(causal_mask(n), q @ k.T / math.sqrt(d), -np.inf))
    dp = d_out @ v.T
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    return ds @ k / math.sqrt(d), ds.T @ k / math.sqrt(d), p.T @ d_out
# --8<-- [end:ex4-wrong-keys-for-queries]


# --8<-- [start:ex4-wrong-transposed-ds]
# rejected with: dq is wrong
def causal_attention_backward(d_out, q, k, v):
    n, d = q.shape
    p = softmax(np.where(causal_mask(n), q @ k.T / math.sqrt(d), -np.inf))
    dp = d_out @ v.T
    ds = (p * (dp - np.sum(dp * p, axis=-1, keepdims=True))).T  # "fixed" here
    return ds @ k / math.sqrt(d), ds @ q / math.sqrt(d), p.T @ d_out
# --8<-- [end:ex4-wrong-transposed-ds]


# --8<-- [start:ex4-wrong-no-softmax-correction]
# rejected with: both come from dS
def causal_attention_backward(d_out, q, k, v):
    n, d = q.shape
    p = softmax(np.where(causal_mask(n), q @ k.T / math.sqrt(d), -np.inf))
    ds = p * (d_out @ v.T)
    return ds @ k / math.sqrt(d), ds.T @ q / math.sqrt(d), p.T @ d_out
# --8<-- [end:ex4-wrong-no-softmax-correction]
