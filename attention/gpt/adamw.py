"""AdamW with parameter groups: decay the weight matrices, not the norms'
gains or the biases.

Reference: Loshchilov and Hutter, "Decoupled Weight Decay Regularization"
(2019). Weight decay pulls every weight towards zero by a fraction lr · λ
each step, outside Adam's per-entry scaling (that is what "decoupled"
means). A norm's gain or a bias is one number per feature whose scale the
model needs; pulling it to zero only fights the loss, so GPT-2-style recipes
(and nanoGPT) decay only the tensors with two or more axes. Each group is
chapter 6's ``adam_step`` with its own decay; together they are
``torch.optim.AdamW`` given the same two groups.
"""

# --8<-- [start:adamw]
from attention.optim import adam_init, adam_step


def decay_groups(params):
    """{"decay": names of the matrices (embeddings included),
    "no_decay": names of the norms' gains and the biases}."""
    return {"decay": [n for n, p in params.items() if p.ndim >= 2],
            "no_decay": [n for n, p in params.items() if p.ndim < 2]}


def adamw_init(params, groups):
    """One Adam state per group (its own step count, m and v)."""
    return {g: adam_init({n: params[n] for n in names})
            for g, names in groups.items()}


def adamw_step(params, grads, state, groups, *, lr, weight_decay,
               betas=(0.9, 0.999), eps=1e-8):
    """One AdamW step in place: the "decay" group decays, the other not."""
    for g, names in groups.items():
        adam_step({n: params[n] for n in names},
                  {n: grads[n] for n in names}, state[g], lr=lr,
                  betas=betas, eps=eps,
                  weight_decay=weight_decay if g == "decay" else 0.0)
# --8<-- [end:adamw]
