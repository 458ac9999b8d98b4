"""Prefix caching by block: a prompt that starts like an earlier one reuses its blocks.

Reference: W. Kwon et al. (SOSP 2023), section 4.4 (shared prefixes); vLLM's automatic
prefix caching, which finds a full block by a hash of its tokens chained with the hash
of everything before it (SGLang's RadixAttention keeps a radix tree of tokens instead).

Keys and values of a token depend on the token and everything before it, so a block of
``block_size`` tokens can be reused exactly when its tokens and all earlier tokens are
the same. The key of block i is (the hash of block i - 1's key, block i's tokens): equal
keys mean an equal prefix up to that block (barring a collision of the 64-bit hash of
the prefix, with equal tokens in the block itself as well). Only full blocks are cached:
a partly filled one is still being written. The cache holds a reference to each block
it keeps, so a finished request's blocks stay in the pool for the next request with the
same prefix; when the pool runs out, the least recently used block that only the cache
holds is given back first.
"""

# --8<-- [start:prefix]
class PrefixCache:
    """Full blocks of prefilled tokens, found again by their prefix. Counts
    the full blocks looked up, found and given back (``looked_up``,
    ``found``, ``evicted``)."""

    def __init__(self):
        self.blocks = {}  # key -> block, least recently used first
        self.pool, self.looked_up, self.found, self.evicted = None, 0, 0, 0

    def keys(self, ids):
        """The key of each full block of ids: its tokens and its prefix's."""
        bs, parent = self.pool.block_size, None
        for start in range(0, len(ids) - bs + 1, bs):
            key = (hash(parent), tuple(ids[start:start + bs].tolist()))
            yield key
            parent = key

    def match(self, ids):
        """The cached blocks of ids's longest cached prefix, leaving its
        last token to compute (the prefill must give the next logits)."""
        found = []
        for key in self.keys(ids[:-1]):
            if key not in self.blocks:
                break
            found.append(self.blocks.pop(key))
            self.blocks[key] = found[-1]  # now the most recently used
        return found

    def count(self, ids, found):
        """A prefill of ids looked up its full blocks and found these."""
        self.looked_up += (len(ids) - 1) // self.pool.block_size
        self.found += len(found)

    def insert(self, ids, table):
        """Keep the full blocks of ids, prefilled into the blocks of table."""
        for key, block in zip(self.keys(ids), table):
            if key not in self.blocks:
                self.pool.share(block)
                self.blocks[key] = block

    def evict(self, keep=()):
        """Give back the least recently used block only the cache holds
        (not one of keep): True, or False when there is none."""
        for key, block in self.blocks.items():
            if self.pool.refs[block] == 1 and block not in keep:
                del self.blocks[key]
                self.pool.release(block)
                self.evicted += 1
                return True
        return False
# --8<-- [end:prefix]
