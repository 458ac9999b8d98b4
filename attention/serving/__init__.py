"""Chapter 11, serving: four ways an inference engine decodes faster, each equal to plain
decoding (the tests and the chapter prove it).

    speculative   a draft proposes, the target verifies: the accept/reject rule,
                  speculate, speculative_generate (Leviathan et al. 2023; Chen et
                  al. 2023)
    drafts        drafts without weights: prompt lookup and an n-gram table
    exact         every continuation's probability by enumeration: speculative
                  decoding's distribution is the target's
    paged         a block pool with a free list, reference counts and copy-on-write;
                  block tables, gather, PagedKVCache for forward (Kwon et al. 2023)
    batching      continuous and static batching on one paged pool, in steps (Orca)
    split_kv      Flash-Decoding: attention per chunk of keys, merged by log-sum-exp
    fast_decode   generate's tokens at serving speed: a prepared weight layout,
                  2-D products, a cache written in place (section 11.5)

``attention.speculative`` re-exports ``speculative_generate``.
"""
