"""Chapter 13's ViT against Hugging Face's ViTModel, float64.

Hugging Face's eager attention takes its softmax in float32 even in a float64 model;
the reference runs the same code with that softmax in float64 (``float64_hf``), and a
test shows that this moves Hugging Face's outputs only at float32 rounding. Hidden
states and the pooler within 1e-10 of the largest, at the trained image size and, with
``interpolate_pos_encoding=True``, at two others; the patch embedding equals the
convolution it replaces; the bicubic resize equals PyTorch's.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import ViTConfig as HFViTConfig
from transformers import ViTModel

from attention.encoders.vit import (ViTConfig, interpolate_positions,
                                    patch_embed, patchify, resize_bicubic,
                                    vit_config_from_hf, vit_encode,
                                    vit_from_hf)
from tests.package.hf_encoders import (TOL, float64_hf, numpy_state,
                                       randomise, rel_err)

SMALL = dict(hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
             intermediate_size=40, image_size=12, patch_size=4,
             num_channels=3)


@pytest.fixture(scope="module")
def hf_vit():
    torch.manual_seed(0)
    config = HFViTConfig(**SMALL)
    config._attn_implementation = "eager"
    return randomise(ViTModel(config).double().eval(), seed=1)


def run_hf(model, images, **kw):
    with torch.no_grad():
        out = model(torch.from_numpy(images), **kw)
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


def test_patch_embedding_is_the_convolution():
    rng = np.random.default_rng(0)
    images = rng.normal(size=(2, 3, 12, 8))
    kernel, bias = rng.normal(size=(5, 3, 4, 4)), rng.normal(size=5)
    conv = F.conv2d(torch.from_numpy(images), torch.from_numpy(kernel),
                    torch.from_numpy(bias), stride=4)   # (2, 5, 3, 2)
    conv = conv.flatten(2).transpose(1, 2).numpy()      # (2, 6, 5)
    assert rel_err(patch_embed(images, kernel, bias), conv) < 1e-13
    # patch 1 of image 0 is rows 0-3, columns 4-7
    assert np.array_equal(patchify(images, 4)[0, 1],
                          images[0, :, 0:4, 4:8].reshape(-1))


@pytest.mark.parametrize("size", [(3, 3), (5, 7), (2, 1), (6, 2)])
def test_resize_bicubic_equals_torch(size):
    grid = np.random.default_rng(1).normal(size=(3, 3, 4))
    theirs = F.interpolate(torch.from_numpy(grid).permute(2, 0, 1)[None],
                           size=size, mode="bicubic", align_corners=False)
    ours = resize_bicubic(resize_bicubic(grid, size[0], 0), size[1], 1)
    assert rel_err(ours, theirs[0].permute(1, 2, 0).numpy()) < 1e-13


@pytest.mark.parametrize("height, width", [(12, 12), (16, 16), (12, 20)])
def test_vit_equals_hugging_face(hf_vit, height, width):
    params = vit_from_hf(numpy_state(hf_vit), vit_config_from_hf(
        hf_vit.config))
    config = vit_config_from_hf(hf_vit.config)
    images = np.random.default_rng(height + width).normal(
        size=(2, 3, height, width))
    interpolate = (height, width) != (12, 12)
    with float64_hf():
        hidden, pooled = run_hf(hf_vit, images,
                                interpolate_pos_encoding=interpolate)
    ours = vit_encode(params, config, images, interpolate=interpolate)
    assert ours.shape == (2, 1 + (height // 4) * (width // 4), 24)
    assert rel_err(ours, hidden) < TOL
    ours_pooled = np.tanh(ours[:, 0] @ params["pooler.W"] + params["pooler.b"])
    assert rel_err(ours_pooled, pooled) < TOL


def test_the_float64_softmax_moves_hf_only_at_float32_rounding(hf_vit):
    images = np.random.default_rng(5).normal(size=(2, 3, 12, 12))
    as_is, _ = run_hf(hf_vit, images)
    with float64_hf():
        swapped, _ = run_hf(hf_vit, images)
    assert 0 < rel_err(as_is, swapped) < 1e-6


def test_interpolation_keeps_the_class_row_and_the_trained_grid():
    table = np.random.default_rng(2).normal(size=(1 + 9, 4))
    same = interpolate_positions(table, 3, (3, 3))
    assert np.allclose(same, table, rtol=0, atol=1e-14)
    bigger = interpolate_positions(table, 3, (4, 6))
    assert bigger.shape == (25, 4) and np.array_equal(bigger[0], table[0])


def test_vit_refuses_and_names_what_it_does_not_implement(hf_vit):
    with pytest.raises(ValueError, match="hidden_act='relu'"):
        vit_config_from_hf(HFViTConfig(**SMALL | dict(hidden_act="relu")))
    with pytest.raises(ValueError, match="qkv_bias=False"):
        vit_config_from_hf(HFViTConfig(**SMALL | dict(qkv_bias=False)))
    with pytest.raises(ValueError, match="pooler_output_size=10"):
        vit_config_from_hf(HFViTConfig(**SMALL | dict(pooler_output_size=10)))
    with pytest.raises(ValueError, match="image_size=\\(12, 16\\)"):
        vit_config_from_hf(HFViTConfig(**SMALL | dict(image_size=(12, 16))))
    config = vit_config_from_hf(hf_vit.config)
    params = vit_from_hf(numpy_state(hf_vit), config)
    with pytest.raises(ValueError, match="16x16 pixels are not the trained "
                                         "12x12; pass interpolate=True"):
        vit_encode(params, config, np.zeros((1, 3, 16, 16)))
    with pytest.raises(ValueError, match="height 10 and width 12 must be"):
        patchify(np.zeros((1, 3, 10, 12)), 4)
    with pytest.raises(ValueError, match="must have 3 channels"):
        patch_embed(np.zeros((1, 1, 8, 8)), params["embed.kernel"],
                    params["embed.bias"])
    with pytest.raises(ValueError, match=r"table must be \(1 \+ 3²"):
        interpolate_positions(np.zeros((9, 4)), 3, (4, 4))
    assert ViTConfig().grid == 14


def test_vit_helpers_name_the_argument_at_fault():
    with pytest.raises(ValueError, match="kernel must be \\(d_model, channels"):
        patch_embed(np.zeros((1, 3, 8, 8)), np.zeros((5, 3, 4)), np.zeros(5))
    with pytest.raises(ValueError, match="size must be a positive integer"):
        resize_bicubic(np.zeros((3, 2)), 0, 0)
    with pytest.raises(ValueError, match="new_grid must be \\(rows, cols\\)"):
        interpolate_positions(np.zeros((10, 2)), 3, 4)
