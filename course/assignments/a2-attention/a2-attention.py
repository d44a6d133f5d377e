# %% [raw]
# # ASSIGNMENT CONFIG
# name: a2-attention
# init_cell: true
# check_all_cell: true
# export_cell: false
# run_tests: false
# solutions_pdf: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Assignment 2: attention from scratch, with its tests
#
# Chapters 5 and 6. You write scaled dot-product attention and multi-head attention with plain
# tensor operations, then write the tests that would have caught the usual mistakes. The
# grader checks your code against the book's `vitbook.model.scaled_dot_product` and
# `vitbook.model.Attention`, and runs your tests against correct and broken implementations.
# Do not call `torch.nn.functional.scaled_dot_product_attention` or the book's functions in
# your answers.
#
# Run `grader.check("q1")` (and so on) after each answer for the visible checks; the
# instructor's grader also runs hidden ones.

# %%
import torch

from vitbook.model import Attention

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 4

# %% [markdown]
# **Q1.** Write `attention(q, k, v)`: queries `(..., n, d)`, keys `(..., m, d)`, values
# `(..., m, dv)`; return `(output, weights)` with `weights = softmax(q k^T / sqrt(d))` of shape
# `(..., n, m)` (each row sums to one) and `output = weights v` of shape `(..., n, dv)`. Any
# number of leading batch dimensions must work.

# %%
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    # BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (..., n, m)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
q = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
k = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
v = torch.tensor([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]])
out, w = attention(q, k, v)
assert out.shape == (1, 2) and w.shape == (1, 3)
assert torch.allclose(w.sum(-1), torch.ones(1))

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
from vitbook.model import scaled_dot_product
g = torch.Generator().manual_seed(0)
for lead, n, m, d, dv in [((), 3, 3, 4, 2), ((2,), 5, 7, 8, 3), ((2, 3), 4, 4, 16, 16)]:
    q, k, v = (torch.randn(*lead, a, b, generator=g) for a, b in ((n, d), (m, d), (m, dv)))
    out, w = attention(q, k, v)
    ref_out, ref_w = scaled_dot_product(q, k, v)
    assert w.shape == ref_w.shape and out.shape == ref_out.shape
    assert (w - ref_w).abs().max() < 1e-5 and (out - ref_out).abs().max() < 1e-4

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 4

# %% [markdown]
# **Q2.** Write `multi_head(x, attn)`: given tokens `x` of shape `(B, T, D)` and a
# `vitbook.model.Attention` module `attn` (its `attn.qkv` is one `Linear(D, 3D)`, its
# `attn.proj` a `Linear(D, D)`, its `attn.heads` the number of heads), return what
# `attn(x, return_weights=True)` returns: the output `(B, T, D)` and the weights
# `(B, heads, T, T)`. Use your `attention` from Q1. Read the layout of the `3D` outputs of
# `qkv` from the book's code (Chapter 6): all heads' queries first, then keys, then values.

# %%
def multi_head(x: torch.Tensor, attn: Attention):
    # BEGIN SOLUTION
    B, T, D = x.shape
    h = attn.heads
    qkv = attn.qkv(x).reshape(B, T, 3, h, D // h).permute(2, 0, 3, 1, 4)  # (3, B, h, T, Dh)
    out, w = attention(qkv[0], qkv[1], qkv[2])  # (B, h, T, Dh), (B, h, T, T)
    out = out.transpose(1, 2).reshape(B, T, D)
    return attn.proj(out), w
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
_ = torch.manual_seed(0)
a = Attention(dim=8, heads=2)
x = torch.randn(1, 5, 8)
with torch.no_grad():
    out, w = multi_head(x, a)
assert out.shape == (1, 5, 8) and w.shape == (1, 2, 5, 5)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
_ = torch.manual_seed(1)
for dim, heads, B, T in [(8, 2, 2, 5), (12, 3, 1, 7), (16, 1, 3, 4), (16, 4, 2, 10)]:
    a = Attention(dim=dim, heads=heads)
    x = torch.randn(B, T, dim)
    with torch.no_grad():
        out, w = multi_head(x, a)
        ref_out, ref_w = a(x, return_weights=True)
    assert (w - ref_w).abs().max() < 1e-5, (dim, heads)
    assert (out - ref_out).abs().max() < 1e-5, (dim, heads)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 4

# %% [markdown]
# **Q3.** Write `check_attention(fn)`: your own tests of an attention function with the
# signature of Q1. It must return quietly when `fn` is correct and raise an `AssertionError`
# when it is wrong. The grader gives it the book's function (which must pass) and several
# broken versions, each with one of the mistakes Chapter 5 warns about (which must fail).
# Think of the properties a correct function has on inputs you can work out by hand: the
# worked example of Chapter 5, rows that sum to one, which axis the softmax runs over, what
# happens when the head size grows.

# %%
def check_attention(fn) -> None:
    # BEGIN SOLUTION
    q = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    v = torch.tensor([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]])
    out, w = fn(q, k, v)
    want = torch.softmax(torch.tensor([2.0, 0.0, 1.0]) / 2.0, dim=0)  # scores / sqrt(4)
    assert torch.allclose(w[0], want, atol=1e-4), w
    assert torch.allclose(out[0], want @ v, atol=1e-3), out
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(2, 4, 6, generator=g), torch.randn(2, 5, 6, generator=g), torch.randn(2, 5, 3, generator=g)
    out, w = fn(q, k, v)
    assert w.shape == (2, 4, 5) and out.shape == (2, 4, 3)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4), atol=1e-5)
    assert torch.allclose(out, w @ v, atol=1e-4)
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
from vitbook.model import scaled_dot_product
check_attention(scaled_dot_product)  # the book's function passes your tests
def unscaled(q, k, v):  # forgets to divide by sqrt(d): your tests must catch it
    return scaled_dot_product(q, k, v, scale=False)
try:
    check_attention(unscaled)
except AssertionError:
    pass
else:
    raise AssertionError("check_attention accepted attention without the 1/sqrt(d) scaling")

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
from vitbook.model import scaled_dot_product
def unscaled(q, k, v):
    return scaled_dot_product(q, k, v, scale=False)
def wrong_axis(q, k, v):
    w = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(dim=-2)
    return w @ v, w
def scaled_by_d(q, k, v):
    w = (q @ k.transpose(-2, -1) / q.shape[-1]).softmax(dim=-1)
    return w @ v, w
def shifted_values(q, k, v):
    w = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(dim=-1)
    return w @ (v + 1.0), w
check_attention(scaled_dot_product)
caught = 0
for broken in (unscaled, wrong_axis, scaled_by_d, shifted_values):
    try:
        check_attention(broken)
    except AssertionError:
        caught += 1
    except Exception:
        pass
assert caught == 4, f"your tests caught {caught} of 4 broken attention functions"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
