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
from attention.practice.ch06 import (check_adam_update, check_attention_grads,
                                     check_cross_entropy_grad,
                                     check_fixed_backward,
                                     check_layer_norm_backward,
                                     check_numerical_gradient,
                                     check_softmax_vjp)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def softmax_vjp(g, p):
    """∂ℒ/∂s from g = ∂ℒ/∂p, for p = softmax(s) along the last axis,
    without forming the Jacobian diag(p) - p pᵀ."""
    # Your code: this is only the diagonal part, diag(p) g.
    return p * g
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def softmax_vjp(g, p):
    """∂ℒ/∂s from g = ∂ℒ/∂p, for p = softmax(s) along the last axis,
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


# --8<-- [start:ex1-wrong-axis-1]
# rejected with: not along axis 1
def softmax_vjp(g, p):
    return p * (g - np.sum(g * p, axis=1, keepdims=True))
# --8<-- [end:ex1-wrong-axis-1]


# --8<-- [start:ex1-wrong-jacobian]
# rejected with: without forming diag(p) - p pᵀ
def softmax_vjp(g, p):
    eye = np.eye(p.shape[-1], dtype=p.dtype)
    jacobian = np.einsum("...i,ij->...ij", p, eye) - np.einsum("...i,...j->...ij", p, p)
    return np.einsum("...ij,...j->...i", jacobian, g)
# --8<-- [end:ex1-wrong-jacobian]


# --8<-- [start:ex1-wrong-no-p]
# rejected with: multiply (g - g·p) by p
def softmax_vjp(g, p):
    return g - np.sum(g * p, axis=-1, keepdims=True)
# --8<-- [end:ex1-wrong-no-p]


# --8<-- [start:ex2-starter]
def attention_grads(d_out, q, k, v):
    """(dQ, dK, dV) of O = softmax(Q Kᵀ / √d) V, given dO (no mask), for
    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d_v): any batch and heads."""
    d = q.shape[-1]
    p = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(d))  # (..., n_q, n_k)
    # Your code: dV, then dP, dS, and dQ and dK.
    return np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def attention_grads(d_out, q, k, v):
    """(dQ, dK, dV) of O = softmax(Q Kᵀ / √d) V, given dO (no mask), for
    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d_v): any batch and heads."""
    d = q.shape[-1]
    p = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(d))  # (..., n_q, n_k)
    dv = np.swapaxes(p, -1, -2) @ d_out  # (..., n_k, d_v): O = P V
    dp = d_out @ np.swapaxes(v, -1, -2)  # (..., n_q, n_k)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))  # the softmax
    dq = ds @ k / math.sqrt(d)  # (..., n_q, d): S = Q Kᵀ / √d
    dk = np.swapaxes(ds, -1, -2) @ q / math.sqrt(d)  # (..., n_k, d)
    return dq, dk, dv
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-no-scale]
# rejected with: dq: entry
def attention_grads(d_out, q, k, v):
    p = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]))
    dp = d_out @ np.swapaxes(v, -1, -2)
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ d_out
# --8<-- [end:ex2-wrong-no-scale]


# --8<-- [start:ex2-wrong-no-softmax-correction]
# rejected with: dq, dk wrong; dv right
def attention_grads(d_out, q, k, v):
    d = q.shape[-1]
    p = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(d))
    ds = p * (d_out @ np.swapaxes(v, -1, -2))
    return (ds @ k / math.sqrt(d), np.swapaxes(ds, -1, -2) @ q / math.sqrt(d),
            np.swapaxes(p, -1, -2) @ d_out)
# --8<-- [end:ex2-wrong-no-softmax-correction]


# --8<-- [start:ex2-wrong-2d-only]
# rejected with: with leading axes (2, 3)
def attention_grads(d_out, q, k, v):
    d = q.shape[-1]
    p = softmax(q @ k.T / math.sqrt(d))
    dp = d_out @ v.T
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    return ds @ k / math.sqrt(d), ds.T @ q / math.sqrt(d), p.T @ d_out
# --8<-- [end:ex2-wrong-2d-only]


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


# --8<-- [start:ex3-wrong-own-step]
# rejected with: use that h
def numerical_gradient(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + 1e-3
        f_plus = f(x)
        x.flat[i] = old - 1e-3
        f_minus = f(x)
        x.flat[i] = old
        grad.flat[i] = (f_plus - f_minus) / 2e-3
    return grad
# --8<-- [end:ex3-wrong-own-step]


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
# rejected with: restore each entry exactly
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


# --8<-- [start:ex3-wrong-fixed-small-step]
# rejected with: at this large h
def numerical_gradient(f, x, h=1e-6):
    step = 1e-6  # a good step, but not the one asked for
    grad = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + step
        f_plus = f(x)
        x.flat[i] = old - step
        f_minus = f(x)
        x.flat[i] = old
        grad.flat[i] = (f_plus - f_minus) / (2 * step)
    return grad
# --8<-- [end:ex3-wrong-fixed-small-step]


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


# --8<-- [start:ex5-starter]
def layer_norm_backward(d_y, x, weight, eps=1e-5):
    """(dx, d_weight, d_bias) of y = weight * (x - mean) / √(var + eps) + bias
    over the last axis; d_weight and d_bias sum over every token."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - mean) * rstd  # (..., d)
    d_flat = d_y.reshape(-1, x.shape[-1])  # (tokens, d)
    d_bias = d_flat.sum(axis=0)
    d_weight = (d_flat * x_hat.reshape(-1, x.shape[-1])).sum(axis=0)
    # Your code: this treats mean and rstd as constants; they depend on x.
    dx = d_y * weight * rstd
    return dx, d_weight, d_bias
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def layer_norm_backward(d_y, x, weight, eps=1e-5):
    """(dx, d_weight, d_bias) of y = weight * (x - mean) / √(var + eps) + bias
    over the last axis; d_weight and d_bias sum over every token."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - mean) * rstd  # (..., d)
    d_flat = d_y.reshape(-1, x.shape[-1])  # (tokens, d)
    d_bias = d_flat.sum(axis=0)
    d_weight = (d_flat * x_hat.reshape(-1, x.shape[-1])).sum(axis=0)
    g = d_y * weight  # (..., d): the gradient reaching x_hat
    # x_hat moves with x through the mean (a constant shift of every entry)
    # and through rstd (along x_hat itself): remove both components.
    dx = rstd * (g - g.mean(axis=-1, keepdims=True)
                 - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, d_weight, d_bias
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-mean-only]
# rejected with: dx: entry
def layer_norm_backward(d_y, x, weight, eps=1e-5):
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * rstd
    flat = d_y.reshape(-1, x.shape[-1])
    g = d_y * weight
    dx = rstd * (g - g.mean(axis=-1, keepdims=True))
    return dx, (flat * x_hat.reshape(flat.shape)).sum(0), flat.sum(0)
# --8<-- [end:ex5-wrong-mean-only]


# --8<-- [start:ex5-wrong-per-row-gains]
# rejected with: d_weight: the result should have shape
def layer_norm_backward(d_y, x, weight, eps=1e-5):
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * rstd
    g = d_y * weight
    dx = rstd * (g - g.mean(-1, keepdims=True) - x_hat * (g * x_hat).mean(-1, keepdims=True))
    return dx, (d_y * x_hat).sum(axis=0), d_y.sum(axis=0)
# --8<-- [end:ex5-wrong-per-row-gains]


# --8<-- [start:ex5-wrong-bessel]
# rejected with: dx: entry
def layer_norm_backward(d_y, x, weight, eps=1e-5):
    rstd = 1 / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * rstd
    flat = d_y.reshape(-1, x.shape[-1])
    g = d_y * weight
    dx = rstd * (g - g.mean(-1, keepdims=True) - x_hat * (g * x_hat).mean(-1, keepdims=True))
    return dx, (flat * x_hat.reshape(flat.shape)).sum(0), flat.sum(0)
# --8<-- [end:ex5-wrong-bessel]


# --8<-- [start:ex6-starter]
def cross_entropy_grad(logits, targets):
    """∂ℒ/∂logits, for ℒ the mean over counted rows of
    -log softmax(logits)[target]; a target of -100 is ignored.
    logits (..., vocab), targets (...)."""
    p = softmax(logits, axis=-1)  # (..., vocab)
    one_hot = np.zeros_like(p)
    # Your code: ignored targets, and the mean.
    np.put_along_axis(one_hot, targets[..., None], 1.0, axis=-1)
    return p - one_hot
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def cross_entropy_grad(logits, targets):
    """∂ℒ/∂logits, for ℒ the mean over counted rows of
    -log softmax(logits)[target]; a target of -100 is ignored.
    logits (..., vocab), targets (...)."""
    p = softmax(logits, axis=-1)  # (..., vocab)
    counted = targets != -100  # (...)
    safe = np.where(counted, targets, 0)  # any index for the ignored rows
    one_hot = np.zeros_like(p)
    np.put_along_axis(one_hot, safe[..., None], 1.0, axis=-1)
    n = max(int(counted.sum()), 1)  # the mean is over counted rows only
    return (p - one_hot) * counted[..., None] / n
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-summed]
# rejected with: divide by N
def cross_entropy_grad(logits, targets):
    p = softmax(logits, axis=-1)
    one_hot = np.zeros_like(p)
    np.put_along_axis(one_hot, targets[..., None], 1.0, axis=-1)
    return p - one_hot
# --8<-- [end:ex6-wrong-summed]


# --8<-- [start:ex6-wrong-mean-over-all]
# rejected with: not by all of them
def cross_entropy_grad(logits, targets):
    p = softmax(logits, axis=-1)
    counted = targets != -100
    one_hot = np.zeros_like(p)
    np.put_along_axis(one_hot, np.where(counted, targets, 0)[..., None], 1.0, axis=-1)
    return (p - one_hot) * counted[..., None] / targets.size
# --8<-- [end:ex6-wrong-mean-over-all]


# --8<-- [start:ex6-wrong-sign]
# rejected with: the sign
def cross_entropy_grad(logits, targets):
    p = softmax(logits, axis=-1)
    counted = targets != -100
    one_hot = np.zeros_like(p)
    np.put_along_axis(one_hot, np.where(counted, targets, 0)[..., None], 1.0, axis=-1)
    return (one_hot - p) * counted[..., None] / max(int(counted.sum()), 1)
# --8<-- [end:ex6-wrong-sign]


# --8<-- [start:ex6-wrong-mean-over-two-at-least]
# rejected with: Not yet
def cross_entropy_grad(logits, targets):
    p = softmax(logits, axis=-1)
    counted = targets != -100
    one_hot = np.zeros_like(p)
    np.put_along_axis(one_hot, np.where(counted, targets, 0)[..., None], 1.0, axis=-1)
    n = max(int(counted.sum()), 2)  # guards a division by 0, but too far
    return (p - one_hot) * counted[..., None] / n
# --8<-- [end:ex6-wrong-mean-over-two-at-least]


# --8<-- [start:ex7-starter]
def adam_update(p, g, m, v, t, lr, beta1, beta2, eps):
    """Adam's step t (from 1): returns the new (p, m, v); changes nothing."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    # Your code: early steps are biased towards the zeros m and v start at.
    return p - lr * m / (np.sqrt(v) + eps), m, v
# --8<-- [end:ex7-starter]


# --8<-- [start:ex7-solution]
def adam_update(p, g, m, v, t, lr, beta1, beta2, eps):
    """Adam's step t (from 1): returns the new (p, m, v); changes nothing."""
    m = beta1 * m + (1 - beta1) * g  # running mean of the gradient
    v = beta2 * v + (1 - beta2) * g * g  # running mean of its square
    m_hat = m / (1 - beta1**t)  # undo the pull towards the zero start
    v_hat = v / (1 - beta2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
# --8<-- [end:ex7-solution]


# --8<-- [start:ex7-wrong-in-place]
# rejected with: changed its input
def adam_update(p, g, m, v, t, lr, beta1, beta2, eps):
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    p -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return p, m, v
# --8<-- [end:ex7-wrong-in-place]


# --8<-- [start:ex7-wrong-step-from-zero]
# rejected with: p: entry
def adam_update(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** (t + 1)), v / (1 - beta2 ** (t + 1))
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
# --8<-- [end:ex7-wrong-step-from-zero]


# --8<-- [start:ex7-wrong-eps-inside]
# rejected with: p: entry
def adam_update(p, g, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return p - lr * m_hat / np.sqrt(v_hat + 1e-4), m, v
# --8<-- [end:ex7-wrong-eps-inside]
