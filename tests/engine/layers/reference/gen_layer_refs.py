#!/usr/bin/env python3
"""Reference forward/backward values for dtrain's layers, computed with PyTorch
(CPU, float64) from small deterministic inputs. Writes layer_refs.json beside
this script; tests/engine/layers/test_layer_refs.cpp compares against it.

Layouts are converted here: our activations are NHWC and conv kernels HWIO
(TensorFlow); PyTorch wants NCHW and OIHW. TensorFlow SAME padding is applied
explicitly with F.pad (extra pad at the bottom/right).

Run: python3 tests/engine/layers/reference/gen_layer_refs.py
"""
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_refs.json")


def f32(rng, shape, scale=1.0):
    """Float32-representable values (so the C++ side sees the same inputs)."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def q(a):
    """Rounds to float32-representable values."""
    return np.asarray(a).astype(np.float32).astype(np.float64)


def enc(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float("%.10g" % v) for v in a.reshape(-1)]}


def same_pads(n, k, s, d=1):
    out = math.ceil(n / s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def tf_pad(x_nchw, kernel, strides, dilation, padding, value=0.0):
    if padding == "valid":
        return x_nchw
    top, bottom = same_pads(x_nchw.shape[2], kernel[0], strides[0], dilation[0])
    left, right = same_pads(x_nchw.shape[3], kernel[1], strides[1], dilation[1])
    return F.pad(x_nchw, (left, right, top, bottom), value=value)


def nhwc_to_nchw(t):
    return t.permute(0, 3, 1, 2)


def nchw_to_nhwc(t):
    return t.permute(0, 2, 3, 1)


def run(fn, x, params, dy):
    """Returns y, dx, [dparam...] of sum(fn(x, params) * dy). An input the
    function does not differentiate through (token ids) gets dx = 0."""
    xt = torch.tensor(x, requires_grad=True)
    pt = [torch.tensor(p, requires_grad=True) for p in params]
    y = fn(xt, pt)
    (y * torch.tensor(dy)).sum().backward()
    dx = xt.grad.numpy() if xt.grad is not None else np.zeros_like(x)
    return y.detach().numpy(), dx, [p.grad.numpy() for p in pt]


def case(name, layer, x, params, dy_shape, fn, rng, training=True, extra=None):
    dy = f32(rng, dy_shape)
    y, dx, dparams = run(fn, x, params, dy)
    assert y.shape == tuple(dy_shape), (name, y.shape, dy_shape)
    c = {"name": name, "layer": layer, "training": training, "x": enc(x), "params": [enc(p) for p in params],
         "dy": enc(dy), "y": enc(y), "dx": enc(dx), "dparams": [enc(g) for g in dparams]}
    if extra:
        c.update(extra)
    return c


def dense_cases(rng):
    out = []
    for use_bias in (True, False):
        x = f32(rng, (3, 4))
        w = f32(rng, (4, 5), 0.5)
        params = [w] + ([f32(rng, (5,))] if use_bias else [])

        def fn(x, p, use_bias=use_bias):
            return F.linear(x, p[0].T, p[1] if use_bias else None)

        out.append(case(f"dense_bias_{use_bias}", {"type": "dense", "units": 5, "use_bias": use_bias}, x, params,
                        (3, 5), fn, rng))
    return out


def dense_rank_cases(rng):
    """Keras Dense on a rank > 2 input: the kernel applies to the last axis at every position."""
    out = []
    for name, shape, use_bias in (("dense_rank3", (2, 3, 4), True), ("dense_rank4_nobias", (2, 2, 3, 4), False)):
        x = f32(rng, shape)
        w = f32(rng, (4, 5), 0.5)
        params = [w] + ([f32(rng, (5,))] if use_bias else [])

        def fn(x, p, use_bias=use_bias):
            return torch.matmul(x, p[0]) + (p[1] if use_bias else 0.0)

        out.append(case(name, {"type": "dense", "units": 5, "use_bias": use_bias}, x, params, shape[:-1] + (5,), fn,
                        rng))
    return out


def conv_cases(rng):
    # (name, input NHWC, filters, kernel, strides, dilation, padding, use_bias)
    specs = [
        ("conv_valid_3x3", (2, 5, 5, 2), 3, (3, 3), (1, 1), (1, 1), "valid", True),
        ("conv_same_3x2_stride2", (2, 6, 7, 2), 3, (3, 2), (2, 2), (1, 1), "same", True),
        ("conv_same_dilation2", (1, 7, 6, 3), 2, (3, 3), (1, 1), (2, 2), "same", True),
        ("conv_valid_2x3_s21_d12_nobias", (2, 6, 8, 2), 3, (2, 3), (2, 1), (1, 2), "valid", False),
        ("conv_same_4x4_stride3", (1, 7, 8, 1), 2, (4, 4), (3, 3), (1, 1), "same", True),
    ]
    out = []
    for name, shape, filters, k, s, d, pad, use_bias in specs:
        x = f32(rng, shape)
        w = f32(rng, (k[0], k[1], shape[3], filters), 0.5)
        params = [w] + ([f32(rng, (filters,))] if use_bias else [])

        def fn(x, p, k=k, s=s, d=d, pad=pad, use_bias=use_bias):
            xn = tf_pad(nhwc_to_nchw(x), k, s, d, pad)
            y = F.conv2d(xn, p[0].permute(3, 2, 0, 1), p[1] if use_bias else None, stride=s, dilation=d)
            return nchw_to_nhwc(y)

        with torch.no_grad():
            y_shape = tuple(fn(torch.tensor(x), [torch.tensor(p) for p in params]).shape)
        layer = {"type": "conv2d", "filters": filters, "kernel": list(k), "strides": list(s),
                 "dilation": list(d), "padding": pad, "use_bias": use_bias}
        out.append(case(name, layer, x, params, y_shape, fn, rng))
    return out


def pool_cases(rng):
    # (name, type, input NHWC, size, strides, padding)
    specs = [
        ("max_valid_2", "max_pool2d", (2, 4, 6, 3), (2, 2), (2, 2), "valid"),
        ("max_same_3_stride2", "max_pool2d", (2, 5, 5, 2), (3, 3), (2, 2), "same"),
        ("max_valid_2x3_s12", "max_pool2d", (1, 5, 7, 2), (2, 3), (1, 2), "valid"),
        ("max_same_2_stride1", "max_pool2d", (1, 4, 5, 2), (2, 2), (1, 1), "same"),
        ("avg_same_3_stride2", "avg_pool2d", (2, 5, 6, 2), (3, 3), (2, 2), "same"),
        ("avg_valid_2_stride1", "avg_pool2d", (1, 4, 5, 3), (2, 2), (1, 1), "valid"),
        ("avg_same_2x3_s21", "avg_pool2d", (1, 5, 7, 2), (2, 3), (2, 1), "same"),
    ]
    out = []
    for name, kind, shape, size, strides, pad in specs:
        x = f32(rng, shape)

        def fn(x, p, kind=kind, size=size, strides=strides, pad=pad):
            xn = nhwc_to_nchw(x)
            if kind == "max_pool2d":
                y = F.max_pool2d(tf_pad(xn, size, strides, (1, 1), pad, value=-math.inf), size, strides)
            else:  # average over the real (unpadded) elements of each window
                sums = F.avg_pool2d(tf_pad(xn, size, strides, (1, 1), pad), size, strides, divisor_override=1)
                ones = tf_pad(torch.ones_like(xn), size, strides, (1, 1), pad)
                counts = F.avg_pool2d(ones, size, strides, divisor_override=1)
                y = sums / counts
            return nchw_to_nhwc(y)

        with torch.no_grad():
            y_shape = tuple(fn(torch.tensor(x), []).shape)
        layer = {"type": kind, "size": list(size), "strides": list(strides), "padding": pad}
        out.append(case(name, layer, x, [], y_shape, fn, rng))
    return out


def batch_norm_cases(rng):
    out = []
    momentum, eps = 0.9, 1e-3
    for name, shape, training in (("bn_train_nhwc", (4, 3, 3, 2), True), ("bn_train_flat", (6, 5), True),
                                  ("bn_infer_nhwc", (3, 2, 2, 3), False)):
        c = shape[-1]
        x = q(f32(rng, shape, 2.0) + 0.5)
        gamma, beta = q(f32(rng, (c,)) + 1.0), f32(rng, (c,))
        mm, mv = f32(rng, (c,), 0.1), q(np.abs(f32(rng, (c,))) + 0.5)
        axes = tuple(range(len(shape) - 1))

        def fn(x, p, axes=axes, training=training, mm=mm, mv=mv):
            if training:
                mean = x.mean(dim=axes)
                var = ((x - mean) ** 2).mean(dim=axes)  # biased
            else:
                mean, var = torch.tensor(mm), torch.tensor(mv)
            return (x - mean) / torch.sqrt(var + eps) * p[0] + p[1]

        if training:
            bmean, bvar = x.mean(axis=axes), x.var(axis=axes)  # numpy var is biased (ddof=0)
            after = [momentum * mm + (1 - momentum) * bmean, momentum * mv + (1 - momentum) * bvar]
        else:
            after = [mm, mv]
        extra = {"moving": [enc(mm), enc(mv)], "moving_after": [enc(a) for a in after]}
        layer = {"type": "batch_norm", "momentum": momentum, "epsilon": eps}
        out.append(case(name, layer, x, [gamma, beta], shape, fn, rng, training, extra))
    return out


def layer_norm_cases(rng):
    """Keras LayerNormalization(axis=-1): per-row mean and biased variance."""
    out = []
    eps = 1e-3
    for name, shape, center, scale in (("ln_flat", (4, 6), True, True), ("ln_seq", (2, 3, 5), True, True),
                                       ("ln_no_center", (3, 4), False, True), ("ln_no_scale", (2, 2, 4), True, False),
                                       ("ln_neither", (3, 5), False, False)):
        c = shape[-1]
        x = q(f32(rng, shape, 2.0) + 0.3)
        params = ([q(f32(rng, (c,)) + 1.0)] if scale else []) + ([f32(rng, (c,))] if center else [])

        def fn(x, p, center=center, scale=scale):
            mean = x.mean(dim=-1, keepdim=True)
            var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased
            y = (x - mean) / torch.sqrt(var + eps)
            if scale:
                y = y * p[0]
            if center:
                y = y + p[1 if scale else 0]
            return y

        layer = {"type": "layer_norm", "epsilon": eps, "center": center, "scale": scale}
        out.append(case(name, layer, x, params, shape, fn, rng))
    return out


def global_pool_cases(rng):
    out = []
    specs = [("gap2d", "global_avg_pool2d", (2, 3, 4, 3)), ("gmp2d", "global_max_pool2d", (2, 3, 4, 3)),
             ("gap1d", "global_avg_pool1d", (3, 5, 2))]
    for name, kind, shape in specs:
        # Distinct values (a shuffled grid): max pooling's argmax is unique.
        x = q((rng.permutation(int(np.prod(shape))).reshape(shape) - np.prod(shape) / 2) * 0.05)
        axes = tuple(range(1, len(shape) - 1))

        def fn(x, p, kind=kind, axes=axes):
            if kind == "global_max_pool2d":
                return x.amax(dim=axes)
            return x.mean(dim=axes)

        out.append(case(name, {"type": kind}, x, [], (shape[0], shape[-1]), fn, rng))
    return out


def embedding_cases(rng):
    """Keras Embedding: ids (as float32 integers) select rows; ids get no gradient.
    The ids repeat, so the scatter-add sums several rows into one."""
    out = []
    for name, shape, vocab, dim in (("embedding_seq", (3, 4), 6, 5), ("embedding_2d_ids", (2, 2, 3), 4, 3)):
        x = rng.integers(0, vocab, size=shape).astype(np.float64)
        x.reshape(-1)[0] = x.reshape(-1)[1]  # at least one repeated id
        table = f32(rng, (vocab, dim))

        def fn(x, p):
            return F.embedding(x.detach().long(), p[0])

        layer = {"type": "embedding", "input_dim": vocab, "output_dim": dim}
        out.append(case(name, layer, x, [table], shape + (dim,), fn, rng))
    return out


def position_embedding_cases(rng):
    """y = x + embeddings[:T] (keras_hub PositionEmbedding, added to its input)."""
    out = []
    for name, shape, length in (("posemb_shorter", (2, 3, 4), 5), ("posemb_full", (3, 4, 2), 4),
                                ("posemb_rank4", (2, 2, 3, 2), 3)):
        x = f32(rng, shape)
        table = f32(rng, (length, shape[-1]))

        def fn(x, p, t=shape[-2]):
            return x + p[0][:t]

        layer = {"type": "position_embedding", "sequence_length": length}
        out.append(case(name, layer, x, [table], shape, fn, rng))
    return out


def activation_cases(rng):
    fns = {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
           "softmax": lambda t: torch.softmax(t, dim=-1)}
    out = []
    for act, fn in fns.items():
        shapes = [(3, 5), (2, 3, 4)] if act == "softmax" else [(3, 7)]
        for shape in shapes:
            x = f32(rng, shape, 2.0)
            if act == "relu":  # keep away from the kink at 0
                x = np.where(np.abs(x) < 0.05, 0.5, x)
            out.append(case(f"{act}_{'x'.join(map(str, shape))}", {"type": "activation", "activation": act}, x, [],
                            shape, lambda t, p, fn=fn: fn(t), rng))
    return out


def zero_padding_cases(rng):
    out = []
    for pad in ([1, 1], [2, 0]):
        x = f32(rng, (2, 3, 4, 2))

        def fn(t, p, pad=pad):
            # NHWC: F.pad pads from the last dimension backwards (C, W, H).
            return F.pad(t, (0, 0, pad[1], pad[1], pad[0], pad[0]))

        out.append(case(f"zero_padding2d_{pad[0]}x{pad[1]}", {"type": "zero_padding2d", "pad": pad}, x, [],
                        (2, 3 + 2 * pad[0], 4 + 2 * pad[1], 2), fn, rng))
    return out


def attention(q_in, k_in, v_in, p, key_dim, use_bias, causal):
    """Keras MultiHeadAttention written out: q_in (B, Tq, dq), k_in (B, Tk, dk), v_in (B, Tk, dv);
    p = [query/kernel (dq, H, Dk), query/bias (H, Dk), key/kernel, key/bias, value/kernel (dv, H, Dv),
    value/bias (H, Dv), attention_output/kernel (H, Dv, d_out), attention_output/bias (d_out)], the
    biases only with use_bias. No dropout."""
    step = 2 if use_bias else 1
    kernels = p[0::step]
    biases = p[1::step] if use_bias else [0.0] * 4
    query = torch.einsum("btd,dhk->bthk", q_in, kernels[0]) + biases[0]
    key = torch.einsum("btd,dhk->bthk", k_in, kernels[1]) + biases[1]
    value = torch.einsum("btd,dhv->bthv", v_in, kernels[2]) + biases[2]
    query = query / math.sqrt(key_dim)
    scores = torch.einsum("bqhk,bshk->bhqs", query, key)  # (B, H, Tq, Tk)
    if causal:  # query i attends to keys j <= i
        allowed = torch.ones(scores.shape[-2], scores.shape[-1], dtype=torch.bool).tril()
        scores = scores.masked_fill(~allowed, -math.inf)
    probs = torch.softmax(scores, dim=-1)
    heads = torch.einsum("bhqs,bshv->bqhv", probs, value)  # (B, Tq, H, Dv)
    return torch.einsum("bqhv,hvo->bqo", heads, kernels[3]) + biases[3]


def attention_params(rng, dq, dk, dv, heads, key_dim, value_dim, out, use_bias):
    shapes = [((dq, heads, key_dim), (heads, key_dim)), ((dk, heads, key_dim), (heads, key_dim)),
              ((dv, heads, value_dim), (heads, value_dim)), ((heads, value_dim, out), (out,))]
    params = []
    for kernel, bias in shapes:
        params.append(f32(rng, kernel, 0.5))
        if use_bias:
            params.append(f32(rng, bias, 0.5))
    return params


def attention_layer(heads, key_dim, value_dim, out, use_bias, causal):
    layer = {"type": "multi_head_attention", "num_heads": heads, "key_dim": key_dim, "use_bias": use_bias,
             "use_causal_mask": causal}
    if value_dim is not None:
        layer["value_dim"] = value_dim
    if out is not None:
        layer["output_shape"] = out
    return layer


def attention_self_cases(rng):
    """multi_head_attention on one input (query = key = value), through the layer registry."""
    # (name, (B, T, d), heads, key_dim, value_dim, output_shape, use_bias, causal)
    specs = [
        ("mha_self_bias", (2, 5, 6), 2, 3, None, None, True, False),
        ("mha_self_causal_bias", (2, 5, 6), 2, 3, None, None, True, True),
        ("mha_self_nobias", (2, 4, 5), 3, 2, None, None, False, False),
        ("mha_self_causal_nobias", (3, 4, 5), 3, 2, None, None, False, True),
        ("mha_self_value_dim_output_shape", (2, 6, 4), 2, 3, 5, 7, True, True),
    ]
    out = []
    for name, shape, heads, key_dim, value_dim, out_dim, use_bias, causal in specs:
        d = shape[2]
        x = f32(rng, shape)
        params = attention_params(rng, d, d, d, heads, key_dim, value_dim or key_dim, out_dim or d, use_bias)

        def fn(x, p, key_dim=key_dim, use_bias=use_bias, causal=causal):
            return attention(x, x, x, p, key_dim, use_bias, causal)

        layer = attention_layer(heads, key_dim, value_dim, out_dim, use_bias, causal)
        out.append(case(name, layer, x, params, (shape[0], shape[1], out_dim or d), fn, rng))
    return out


def attention_core_cases(rng):
    """The three-input core: query, key and value of different sizes, Tq != Tk."""
    # (name, B, Tq, Tk, dq, dk, dv, heads, key_dim, value_dim, output_shape, use_bias, causal)
    specs = [
        ("core_cross_bias", 2, 4, 6, 5, 3, 7, 3, 2, 4, 3, True, False),
        ("core_cross_causal_nobias", 2, 5, 3, 4, 6, 2, 2, 3, 5, None, False, True),
    ]
    out = []
    for name, b, tq, tk, dq, dk, dv, heads, key_dim, value_dim, out_dim, use_bias, causal in specs:
        inputs = [f32(rng, (b, tq, dq)), f32(rng, (b, tk, dk)), f32(rng, (b, tk, dv))]
        params = attention_params(rng, dq, dk, dv, heads, key_dim, value_dim, out_dim or dq, use_bias)
        dy = f32(rng, (b, tq, out_dim or dq))
        it = [torch.tensor(a, requires_grad=True) for a in inputs]
        pt = [torch.tensor(a, requires_grad=True) for a in params]
        y = attention(*it, pt, key_dim, use_bias, causal)
        (y * torch.tensor(dy)).sum().backward()
        out.append({"name": name, "layer": attention_layer(heads, key_dim, value_dim, out_dim, use_bias, causal),
                    "inputs": [enc(a) for a in inputs], "params": [enc(a) for a in params], "dy": enc(dy),
                    "y": enc(y.detach().numpy()), "dinputs": [enc(t.grad.numpy()) for t in it],
                    "dparams": [enc(t.grad.numpy()) for t in pt]})
    return out


def main():
    rng = np.random.default_rng(20240611)
    cases = dense_cases(rng) + conv_cases(rng) + pool_cases(rng) + batch_norm_cases(rng) + activation_cases(rng)
    # Drawn after the original cases so theirs keep their values.
    cases += (dense_rank_cases(rng) + layer_norm_cases(rng) + global_pool_cases(rng) + embedding_cases(rng) +
              position_embedding_cases(rng))
    cases += zero_padding_cases(rng)
    # Drawn after the others, so adding them left the earlier cases' values unchanged.
    cases += attention_self_cases(rng)
    core_cases = attention_core_cases(rng)
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/engine/layers/reference/gen_layer_refs.py", "torch": torch.__version__,
                   "cases": cases, "attention_core_cases": core_cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
