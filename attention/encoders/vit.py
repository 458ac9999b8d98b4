"""ViT: an image cut into patches, each patch a token, read by a pre-LN encoder.

Reference: Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale" (2021), section 3.1 (patches flattened and projected, a learnable
class token, learned 1-D position embeddings, pre-LN blocks) and section 3.2 (for a
larger image at fine-tuning, "2D interpolation of the pre-trained position embeddings,
according to their location in the original image").

The patch embedding is usually written as a convolution whose kernel and stride are
both the patch size. Such a convolution never overlaps two patches, so it is exactly a
reshape (cut the image into patches and flatten each one) followed by one matrix
product with the kernel flattened the same way.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.blocks import encoder_block
from attention.encoders.hf import StateReader, refuse
from attention.model import block_params
from attention.norms import layer_norm
# --8<-- [end:imports]


# --8<-- [start:config]
@dataclass(frozen=True)
class ViTConfig:
    d_model: int = 768
    n_layers: int = 12
    n_heads: int = 12
    d_ff: int = 3072
    image_size: int = 224     # the square image it was trained on
    patch_size: int = 16      # pixels per side of a patch
    n_channels: int = 3       # red, green, blue
    norm_eps: float = 1e-12   # LayerNorm's eps

    @property
    def grid(self):
        """Patches per side: 224 / 16 = 14, so 196 patch tokens."""
        return self.image_size // self.patch_size
# --8<-- [end:config]


# --8<-- [start:patchify]
def patchify(images, patch_size):
    """Cut images into non-overlapping patches, each flattened.

    images: (batch, channels, height, width), both sides multiples of
    patch_size. Returns (batch, n_patches, channels * patch_size²), the
    patches in reading order (row by row), each flattened channel first,
    then its rows, then its columns: the order of a convolution kernel's
    weights (d_model, channels, patch_size, patch_size).
    """
    images = np.asarray(images)
    if images.ndim != 4:
        raise ValueError(f"patchify: images must be (batch, channels, "
                         f"height, width), got shape {images.shape}")
    b, c, h, w = images.shape
    P = patch_size
    if h % P or w % P or h == 0 or w == 0:
        raise ValueError(f"patchify: height {h} and width {w} must be "
                         f"positive multiples of patch_size {P}")
    x = images.reshape(b, c, h // P, P, w // P, P)  # (b, c, rows, P, cols, P)
    x = x.transpose(0, 2, 4, 1, 3, 5)               # (b, rows, cols, c, P, P)
    return x.reshape(b, (h // P) * (w // P), c * P * P)


def patch_embed(images, kernel, bias):
    """The patch embedding: patchify, then one matrix product.

    kernel: (d_model, channels, P, P), a stride-P convolution's weights;
    bias: (d_model,). Returns (batch, n_patches, d_model).
    """
    if np.ndim(kernel) != 4 or np.shape(kernel)[2] != np.shape(kernel)[3]:
        raise ValueError(f"patch_embed: kernel must be (d_model, channels, "
                         f"P, P), got {np.shape(kernel)}")
    d_model, c, P, _ = np.shape(kernel)
    if np.shape(images)[1:2] != (c,):
        raise ValueError(f"patch_embed: images must have {c} channels to "
                         f"match the kernel {np.shape(kernel)}, got images "
                         f"{np.shape(images)}")
    W = np.reshape(kernel, (d_model, c * P * P)).T  # (c·P·P, d_model)
    return patchify(images, P) @ W + bias
# --8<-- [end:patchify]


# --8<-- [start:interpolate]
def cubic_weights(t, a=-0.75):
    """The four weights of cubic convolution (Keys 1981) at offset t in
    [0, 1), for the samples at -1, 0, 1, 2; a = -0.75 as in PyTorch."""
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def resize_bicubic(x, size, axis):
    """Resize x along one axis to size samples, bicubic, corners not
    aligned (PyTorch's ``interpolate(mode="bicubic")``): output sample i
    sits at input coordinate (i + 0.5) · n_in / size - 0.5, and samples
    beyond the edges repeat the edge."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) \
            or size < 1:
        raise ValueError(f"resize_bicubic: size must be a positive integer, "
                         f"got {size!r}")
    x = np.moveaxis(np.asarray(x), axis, 0)         # (n_in, ...)
    n_in = x.shape[0]
    where = (np.arange(size) + 0.5) * (n_in / size) - 0.5  # (size,)
    left = np.floor(where).astype(int)
    w = cubic_weights(where - left)                  # (size, 4)
    taps = np.clip(left[:, None] + np.arange(-1, 3), 0, n_in - 1)  # (size, 4)
    out = np.einsum("sk,sk...->s...", w, x[taps])    # (size, ...)
    return np.moveaxis(out, 0, axis)


def interpolate_positions(table, grid, new_grid):
    """Position embeddings for a new grid of patches.

    table: (1 + grid², d_model), the class token's row first, then the
    patches' rows in reading order. The patches' rows are put back on
    their (grid, grid) square, resized bicubically to new_grid = (rows,
    cols) and flattened again; the class token's row is kept.
    Returns (1 + rows · cols, d_model).
    """
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[0] != 1 + grid * grid:
        raise ValueError(f"interpolate_positions: table must be (1 + "
                         f"{grid}², d_model), got {table.shape}")
    if len(np.shape(new_grid)) != 1 or len(new_grid) != 2:
        raise ValueError(f"interpolate_positions: new_grid must be (rows, "
                         f"cols), got {new_grid!r}")
    rows, cols = new_grid
    square = table[1:].reshape(grid, grid, -1)         # (grid, grid, d)
    square = resize_bicubic(resize_bicubic(square, rows, 0), cols, 1)
    return np.concatenate([table[:1], square.reshape(rows * cols, -1)])
# --8<-- [end:interpolate]


# --8<-- [start:encode]
def vit_embed(params, config, images, *, interpolate=False):
    """[class token, patch tokens] + position embeddings.

    images: (batch, channels, height, width). At the trained size the
    table is added as it is; at another size interpolate=True resizes it
    (``interpolate_positions``), as Hugging Face's
    ``interpolate_pos_encoding=True`` does.
    """
    images = np.asarray(images)
    x = patch_embed(images, params["embed.kernel"], params["embed.bias"])
    batch, _, h, w = images.shape
    cls = np.broadcast_to(params["embed.cls"], (batch, 1, config.d_model))
    x = np.concatenate([cls, x], axis=1)       # (batch, 1 + n_patches, d)
    table = params["embed.positions"]          # (1 + grid², d)
    new_grid = (h // config.patch_size, w // config.patch_size)
    if new_grid != (config.grid, config.grid):
        if not interpolate:
            raise ValueError(
                f"vit_embed: images of {h}x{w} pixels are not the trained "
                f"{config.image_size}x{config.image_size}; pass "
                f"interpolate=True to resize the position embeddings")
        table = interpolate_positions(table, config.grid, new_grid)
    return x + table


def vit_encode(params, config, images, *, interpolate=False):
    """ViT's last hidden states (batch, 1 + n_patches, d_model): the
    embeddings, pre-LN encoder blocks with no mask at all, a final
    LayerNorm. Row 0 of each image is its class token."""
    x = vit_embed(params, config, images, interpolate=interpolate)
    for i in range(config.n_layers):
        x = encoder_block(x, block_params(params, i), n_heads=config.n_heads,
                          norm_first=True, activation="gelu",
                          eps=config.norm_eps)
    return layer_norm(x, params["norm.weight"], params["norm.bias"],
                      eps=config.norm_eps)
# --8<-- [end:encode]


# --8<-- [start:from_hf]
def vit_config_from_hf(hf):
    """Our ViTConfig from a transformers ViTConfig; refuses, by name, the
    settings this module does not implement."""
    refuse("vit_config_from_hf", hf, {"hidden_act": "gelu", "qkv_bias": True,
                                      "pooler_act": "tanh"})
    if getattr(hf, "pooler_output_size", None) not in (None, hf.hidden_size):
        raise ValueError(f"vit_config_from_hf: not implemented here: "
                         f"pooler_output_size={hf.pooler_output_size!r} "
                         f"(the pooler keeps hidden_size={hf.hidden_size})")
    if not isinstance(hf.image_size, int) or not isinstance(hf.patch_size,
                                                            int):
        raise ValueError(f"vit_config_from_hf: only square images and "
                         f"patches are implemented, got image_size="
                         f"{hf.image_size!r}, patch_size={hf.patch_size!r}")
    return ViTConfig(d_model=hf.hidden_size, n_layers=hf.num_hidden_layers,
                     n_heads=hf.num_attention_heads,
                     d_ff=hf.intermediate_size, image_size=hf.image_size,
                     patch_size=hf.patch_size, n_channels=hf.num_channels,
                     norm_eps=hf.layer_norm_eps)


_BLOCK = {"attn.W_q": "attention.q_proj", "attn.W_k": "attention.k_proj",
          "attn.W_v": "attention.v_proj", "attn.W_o": "attention.o_proj",
          "mlp.W_in": "mlp.fc1", "mlp.W_out": "mlp.fc2"}
_NORMS = {"norm1": "layernorm_before", "norm2": "layernorm_after"}


def vit_shapes(c, *, pooler=True):
    """{name: shape} of ViT's parameters (and its [CLS] pooler)."""
    d, P = c.d_model, c.patch_size
    shapes = {"embed.kernel": (d, c.n_channels, P, P), "embed.bias": (d,),
              "embed.cls": (d,), "embed.positions": (1 + c.grid ** 2, d)}
    for i in range(c.n_layers):
        b = f"blocks.{i}."
        for ours in _BLOCK:
            d_in, d_out = {"mlp.W_in": (d, c.d_ff),
                           "mlp.W_out": (c.d_ff, d)}.get(ours, (d, d))
            shapes |= {b + ours: (d_in, d_out),
                       b + ours.replace("W_", "b_"): (d_out,)}
        for n in _NORMS:
            shapes |= {b + n + ".weight": (d,), b + n + ".bias": (d,)}
    shapes |= {"norm.weight": (d,), "norm.bias": (d,)}
    if pooler:
        shapes |= {"pooler.W": (d, d), "pooler.b": (d,)}
    return shapes


def vit_from_hf(state, config):
    """Our parameters from a ViTModel state dict of NumPy arrays."""
    r = StateReader(state, "vit_from_hf")
    e = "embeddings."
    p = {"embed.kernel": r[e + "patch_embeddings.projection.weight"],
         "embed.bias": r[e + "patch_embeddings.projection.bias"],
         "embed.cls": r[e + "cls_token"].reshape(-1),
         "embed.positions": r[e + "position_embeddings"][0],
         "norm.weight": r["layernorm.weight"],
         "norm.bias": r["layernorm.bias"]}
    for i in range(config.n_layers):
        hf, b = f"layers.{i}.", f"blocks.{i}."
        for ours, theirs in _BLOCK.items():
            p[b + ours] = r.linear(hf + theirs)
            p[b + ours.replace("W_", "b_")] = r[hf + theirs + ".bias"]
        for ours, theirs in _NORMS.items():
            p[b + ours + ".weight"] = r[hf + theirs + ".weight"]
            p[b + ours + ".bias"] = r[hf + theirs + ".bias"]
    pooler = "pooler.dense.weight" in r
    if pooler:
        p |= {"pooler.W": r.linear("pooler.dense"),
              "pooler.b": r["pooler.dense.bias"]}
    return r.done(p, vit_shapes(config, pooler=pooler))
# --8<-- [end:from_hf]
