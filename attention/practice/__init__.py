"""Self-checks for the practice exercises: call one on your answer; it prints a verdict and returns True/False."""

from attention.practice.chapter2 import (check_attention_weights, check_multi_head_scale,
                                         check_padding_mask, check_permutation_test)

__all__ = ["check_attention_weights", "check_padding_mask", "check_permutation_test", "check_multi_head_scale"]

from attention.practice.chapter5 import (check_merge, check_running_max_and_sum,  # noqa: E402
                                         check_tile_attention, check_tile_kind)

__all__ += ["check_running_max_and_sum", "check_merge", "check_tile_kind", "check_tile_attention"]

from attention.practice.ch04 import (check_decode_step, check_kv_cache_size,  # noqa: E402
                                     check_top_p_filter, check_window_cache_step)

__all__ += ["check_top_p_filter", "check_decode_step", "check_kv_cache_size",
            "check_window_cache_step"]

from attention.practice.ch06 import (check_dv_and_dq, check_fixed_backward,  # noqa: E402
                                     check_numerical_gradient, check_softmax_vjp)

__all__ += ["check_softmax_vjp", "check_dv_and_dq", "check_numerical_gradient",
            "check_fixed_backward"]
