"""A paged KV cache: keys and values in fixed-size blocks, found through a block table.

Reference: W. Kwon et al., "Efficient Memory Management for Large Language Model Serving
with PagedAttention" (SOSP 2023), sections 4.1-4.4: the blocks, the block table, the
free list, reference counts and copy-on-write for shared prefixes.

A contiguous cache gives every sequence room for the longest length it might reach; a
paged cache gives it blocks of ``block_size`` slots as it grows, from one shared pool.
Slot j of a sequence lives in block ``table[j // block_size]`` at offset
``j % block_size``; the last block is the only one partly empty, so a sequence wastes
fewer than block_size slots. Sequences that share a prefix share its blocks (each block
counts its users); the first write into a shared block copies it (copy-on-write).

``PagedKVCache`` is a batch of block tables behind the interface of ``KVCache``, so
chapter 3's ``forward`` runs on it unchanged: ``update`` writes the new keys and values
into the blocks and returns every sequence's keys, gathered and left-padded to a
common length (the padding masked), as chapter 4's left-padded batches are.

What a slot holds is the model's cache entry for one token: n_kv_heads keys and values
of d_head, or for multi-head latent attention (chapter 9, DeepSeek-V3) the latent c_kv
(kv_lora_rank) in the keys' place and the shared rotated key (qk_rope_head_dim) in the
values', one "head" of each; ``pool_for`` sizes a pool for a configuration.
"""

# --8<-- [start:imports]
import numpy as np

from attention.family import family_of


def _check_size(fn, name, value):
    if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
            or value < 1):
        raise ValueError(f"{fn}: {name} must be a positive integer, "
                         f"got {value!r}")
# --8<-- [end:imports]


# --8<-- [start:pool]
class BlockPool:
    """n_blocks blocks of block_size slots, for every layer: keys (n_layers,
    n_blocks, n_kv_heads, block_size, d_head) and values (the same, d_value
    wide: d_head unless given), a free list and a reference count per block
    (how many sequences use it)."""

    def __init__(self, n_blocks, block_size, *, n_layers, n_kv_heads, d_head,
                 d_value=None, dtype=np.float64):
        d_value = d_head if d_value is None else d_value
        for name, value in (("n_blocks", n_blocks), ("block_size", block_size),
                            ("n_layers", n_layers), ("n_kv_heads", n_kv_heads),
                            ("d_head", d_head), ("d_value", d_value)):
            _check_size("BlockPool", name, value)
        self.block_size = block_size
        shape = (n_layers, n_blocks, n_kv_heads, block_size)
        self.keys = np.zeros((*shape, d_head), dtype)
        self.values = np.zeros((*shape, d_value), dtype)
        self.free = list(range(n_blocks))[::-1]  # pop() hands out block 0 first
        self.refs = np.zeros(n_blocks, np.int64)  # users of each block

    def allocate(self):
        """A free block, now used once."""
        if not self.free:
            raise ValueError(f"BlockPool: all {len(self.refs)} blocks are in "
                             f"use; no block left for a new token")
        block = self.free.pop()
        self.refs[block] = 1
        return block

    def share(self, block):
        """One more sequence uses block (a shared prefix)."""
        self.check_live([block])
        self.refs[block] += 1

    def release(self, block):
        """One user less; a block nobody uses goes back on the free list."""
        self.check_live([block])
        self.refs[block] -= 1
        if self.refs[block] == 0:
            self.free.append(block)

    def copy(self, block):
        """A private copy of block, for a sequence about to write into it."""
        new = self.allocate()
        self.keys[:, new] = self.keys[:, block]
        self.values[:, new] = self.values[:, block]
        self.release(block)
        return new

    def check_live(self, table):
        """A ValueError if the table names a block that is free."""
        for block in table:
            if not 0 <= block < len(self.refs) or self.refs[block] == 0:
                raise ValueError(f"BlockPool: the block table {list(table)} "
                                 f"points at block {block}, which is free")


def pool_for(config, n_blocks, block_size, dtype=np.float64):
    """A BlockPool whose slots hold config's cache entry for one token:
    n_kv_heads keys and values of d_head, or MLA's latent c_kv and shared
    rotated key k_rope (chapter 9), kv_lora_rank + qk_rope_head_dim numbers
    per token and layer, whatever the number of heads."""
    if family_of(config).parts["mixer"] == "latent":
        # chapter 12: DeepSeek-V3.2's indexer key rides beside k_rope
        index = 0 if config.indexer is None else config.indexer.head_dim
        widths = dict(n_kv_heads=1, d_head=config.kv_lora_rank,
                      d_value=config.qk_rope_head_dim + index)
    else:
        widths = dict(n_kv_heads=config.n_kv_heads, d_head=config.d_head)
    return BlockPool(n_blocks, block_size, n_layers=config.n_layers,
                     dtype=dtype, **widths)
# --8<-- [end:pool]


# --8<-- [start:gather]
def gather(blocks, table, length):
    """One sequence's first ``length`` slots from the blocks (n_blocks,
    n_kv_heads, block_size, d_head) its table (n_used,) names, in order:
    (n_kv_heads, length, d_head), as a contiguous cache holds them."""
    picked = blocks[np.asarray(table, np.int64)]  # (n_used, heads, bs, d)
    picked = picked.transpose(1, 0, 2, 3)         # (heads, n_used, bs, d)
    heads, d = picked.shape[0], picked.shape[-1]
    return picked.reshape(heads, -1, d)[:, :length]  # (heads, length, d)
# --8<-- [end:gather]


# --8<-- [start:sequence]
class PagedSequence:
    """One sequence's block table and length, in a pool."""

    def __init__(self, pool):
        self.pool, self.table, self.length = pool, [], 0

    def fork(self):
        """A sequence with the same tokens, sharing every block (prefix
        caching); the first write into a shared block copies it."""
        other = PagedSequence(self.pool)
        for block in self.table:
            self.pool.share(block)
        other.table, other.length = list(self.table), self.length
        return other

    def reserve(self, n_new):
        """Blocks for n_new more slots: new ones from the free list, and a
        private copy of a shared last block that is about to be written."""
        bs = self.pool.block_size
        first = self.length // bs  # the block the next slot falls in
        if n_new and first < len(self.table) and (
                self.pool.refs[self.table[first]] > 1):
            self.table[first] = self.pool.copy(self.table[first])
        while len(self.table) * bs < self.length + n_new:
            self.table.append(self.pool.allocate())

    def write(self, layer, k, v):
        """k, v (n_kv_heads, n_new, d_head) into slots length.. of layer."""
        self.pool.check_live(self.table)
        keys, values = self.pool.keys.shape, self.pool.values.shape
        if (k.shape[0] != keys[2] or k.shape[2] != keys[4] or v.shape[0]
                != values[2] or v.shape[2] != values[4]
                or k.shape[1] != v.shape[1]):
            raise ValueError(
                f"PagedSequence.write: k {k.shape} and v {v.shape} do not fit "
                f"the pool's slots of {keys[2]} heads x {keys[4]} (keys) and "
                f"x {values[4]} (values); size the pool for the model with "
                f"pool_for(config, ...)")
        slots = self.length + np.arange(k.shape[1])
        blocks = np.asarray(self.table)[slots // self.pool.block_size]
        offsets = slots % self.pool.block_size
        self.pool.keys[layer, blocks, :, offsets] = k.transpose(1, 0, 2)
        self.pool.values[layer, blocks, :, offsets] = v.transpose(1, 0, 2)

    def read(self, layer, length):
        """The first length slots of layer: keys, values (heads, length, d)."""
        self.pool.check_live(self.table)
        return (gather(self.pool.keys[layer], self.table, length),
                gather(self.pool.values[layer], self.table, length))

    def free(self):
        """Give every block back (the sequence is finished)."""
        for block in self.table:
            self.pool.release(block)
        self.table, self.length = [], 0
# --8<-- [end:sequence]


# --8<-- [start:paged_kv_cache]
class PagedKVCache:
    """A batch of PagedSequences behind KVCache's interface, for ``forward``.

    Each sequence keeps its own length; ``update`` returns the keys and
    values of all of them left-padded to a common length, so the new
    tokens of every sequence sit in the same last columns (the causal
    mask by column is then right for all) and the padding is masked.
    """

    window, n_sinks = None, 0  # no sliding window in a paged cache here

    def __init__(self, sequences):
        self.sequences = list(sequences)
        self.n_real = np.array([s.length for s in self.sequences])  # (batch,)
        self._n_new = None

    def new_positions(self, n_new):
        """The columns of the n_new new tokens: the last n_new."""
        total = int(self.n_real.max()) + n_new
        return np.arange(total - n_new, total)

    def update(self, layer, k, v, valid=None):
        """Write k, v (batch, n_kv_heads, n_new, d_head) into each sequence's
        blocks; return (keys, values, key_positions, key_valid), the keys
        and values (batch, n_kv_heads, total, d_head) left-padded."""
        batch, heads, n_new, d = k.shape
        if batch != len(self.sequences) or (valid is not None
                                            and not np.all(valid)):
            raise ValueError(f"PagedKVCache.update: k {k.shape} must hold "
                             f"{len(self.sequences)} sequences of real tokens "
                             f"(no <pad>)")
        total = int(self.n_real.max()) + n_new
        keys = np.zeros((batch, heads, total, d), k.dtype)
        values = np.zeros((batch, heads, total, v.shape[-1]), v.dtype)
        key_valid = np.zeros((batch, total), bool)
        for b, seq in enumerate(self.sequences):
            if layer == 0:  # the blocks serve every layer: reserve once
                seq.reserve(n_new)
            seq.write(layer, k[b], v[b])
            n = seq.length + n_new
            k_b, v_b = seq.read(layer, n)  # (n_kv_heads, n, d_head) each
            keys[b, :, total - n:], values[b, :, total - n:] = k_b, v_b
            key_valid[b, total - n:] = True  # the left padding is masked
        self._n_new = n_new
        return keys, values, np.arange(total), key_valid

    def advance(self, n_new):
        """After the last layer: every sequence is n_new tokens longer."""
        if self._n_new != n_new:
            raise ValueError(f"PagedKVCache.advance: update() was given "
                             f"{self._n_new} new tokens, got n_new={n_new!r}")
        for seq in self.sequences:
            seq.length += n_new
        self.n_real = self.n_real + n_new
        self._n_new = None
# --8<-- [end:paged_kv_cache]
