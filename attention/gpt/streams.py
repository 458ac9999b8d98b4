"""One random stream drawn on several threads, the numbers in the same order.

A training step draws its micro-batches' windows and dropout masks from one seeded
generator, in order: micro-batch 0's windows, its masks, micro-batch 1's windows, ...
The masks are most of those numbers (every attention weight of every head gets one), and
drawn in order they run on one core. NumPy's PCG64 can jump ahead in its stream
(``advance``: O'Neill, "PCG: A Family of Simple Fast Space-Efficient Statistically Good
Algorithms for Random Number Generation", 2014, section 4.3.1), and ``Generator.random``
takes exactly one 64-bit output per float64. So a copy of the generator at the masks'
place can draw them on another thread while the generator itself jumps past them and
goes on: the same numbers as one thread drawing all in turn (the tests check it).
"""

import numpy as np

JUMPABLE = (np.random.PCG64, np.random.PCG64DXSM)


def jump_past(rng, n_draws):
    """A generator at rng's place in its stream, and rng moved on past the
    n_draws float64s ``rng.random`` would give from there; None (rng
    untouched) when its bit generator cannot jump."""
    bits = rng.bit_generator
    if not isinstance(bits, JUMPABLE):
        return None
    state = bits.state
    here = np.random.Generator(type(bits)())
    here.bit_generator.state = state
    bits.advance(n_draws)  # which clears a kept half of a 64-bit output:
    moved = bits.state     # keep it, as drawing the doubles would have
    moved["has_uint32"], moved["uinteger"] = (state["has_uint32"],
                                              state["uinteger"])
    bits.state = moved
    return here
