"""Reading a Hugging Face state dict into our short names, for the encoders.

Each encoder's converter asks a ``StateReader`` for the keys it knows; at the end
``done`` refuses any key that was never read, so a checkpoint with a part we do not
implement (a pooler we were not told about, an untied head) fails by name instead of
being silently dropped.
"""

import numpy as np


class StateReader:
    """A state dict (name -> array) that remembers which keys were read."""

    def __init__(self, state, fn):
        self.state = {k: np.asarray(v) for k, v in state.items()}
        self.fn = fn  # the converter's name, for errors
        self.read = set()

    def __contains__(self, key):
        return key in self.state

    def __getitem__(self, key):
        if key not in self.state:
            raise ValueError(f"{self.fn}: the state dict has no {key!r} "
                             f"(is it a model of this kind and config?)")
        self.read.add(key)
        return self.state[key]

    def linear(self, key):
        """A torch Linear's weight (d_out, d_in) as our W (d_in, d_out)."""
        return self[key + ".weight"].T

    def done(self, params, shapes):
        """Refuse unread keys, check shapes; returns contiguous copies."""
        unread = sorted(set(self.state) - self.read)
        if unread:
            raise ValueError(f"{self.fn}: these weights are not implemented "
                             f"here: {unread[:4]}"
                             + (" ..." if len(unread) > 4 else ""))
        for name, shape in shapes.items():
            if np.shape(params[name]) != shape:
                raise ValueError(f"{self.fn}: {name} should have shape "
                                 f"{shape} for this config, got "
                                 f"{np.shape(params[name])}")
        return {name: np.array(params[name]) for name in shapes}


def refuse(fn, hf_config, settings):
    """Refuse a Hugging Face config whose settings differ from what we build.

    settings: {attribute: the value we implement}. Raises a ValueError naming
    every attribute that differs, with its value.
    """
    off = {name: getattr(hf_config, name, value)
           for name, value in settings.items()
           if getattr(hf_config, name, value) != value}
    if off:
        raise ValueError(f"{fn}: not implemented here: "
                         + ", ".join(f"{k}={v!r}" for k, v in off.items()))


def check_ids(fn, token_ids, vocab_size, max_positions=None):
    """token_ids as a (batch, n) integer array within the vocabulary."""
    ids = np.asarray(token_ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise ValueError(f"{fn}: token_ids must be a (batch, n) array of "
                         f"integers, got shape {ids.shape}, dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"{fn}: token_ids must lie in 0..{vocab_size - 1}, "
                         f"got {ids.min()}..{ids.max()}")
    if max_positions is not None and ids.shape[1] > max_positions:
        raise ValueError(f"{fn}: {ids.shape[1]} tokens is more than the "
                         f"{max_positions} learned positions")
    return ids


def check_real(fn, real, shape):
    """The real-token mask (batch, n), boolean; None: every token is real."""
    if real is None:
        return np.ones(shape, dtype=bool)
    real = np.asarray(real)
    if real.shape != shape or real.dtype != np.bool_:
        raise ValueError(f"{fn}: real must be a boolean array of shape "
                         f"{shape} (True on real tokens), got shape "
                         f"{real.shape}, dtype {real.dtype}")
    if not real.any(axis=1).all():
        raise ValueError(f"{fn}: every sequence needs at least one real "
                         f"token; rows {np.flatnonzero(~real.any(axis=1))} "
                         f"have none")
    return real
