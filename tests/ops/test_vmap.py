"""torch.func.vmap over every op, through its vmap rule (my_ops/_vmap.py):
batched at the front or inside, with arguments left unbatched, through the
Python API and torch.ops, against the float64 reference of each sample; the
mutating ops write each sample in place."""

from __future__ import annotations

import pytest
import torch

import my_ops
import specs
from conftest import assert_matches, make_input
from my_ops import reference

BATCH = 5
CALLS = ("api", "torch.ops")


def _tensor_positions(args) -> list:
    return [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]


def _samples(spec, device) -> list:
    """BATCH fresh argument tuples of the op (float32)."""
    return [spec.resolve(make_input(spec.input_shape, torch.float32, device)) for _ in range(BATCH)]


def _vmap_call(spec, call, samples, batched: set, in_dim: int):
    """The op under vmap: the tensor arguments at `batched` stacked at in_dim,
    the others sample 0's. Returns (the vmap result, the arguments given)."""
    first = samples[0]
    args, in_dims = [], []
    for i, a in enumerate(first):
        if i in batched:
            args.append(torch.stack([s[i] for s in samples]).movedim(0, in_dim))
            in_dims.append(in_dim)
        else:
            args.append(a)
            in_dims.append(None)
    fn = spec.op if call == "torch.ops" else (spec.api or spec.op)
    if spec.mutates:  # (what the written arguments hold is checked, not what the call returns)
        def mutate(*a) -> None:
            fn(*a)

        torch.vmap(mutate, in_dims=tuple(in_dims), out_dims=None)(*args)
        return None, args
    return torch.vmap(fn, in_dims=tuple(in_dims))(*args), args


def _sample_args(samples, batched: set, k: int) -> list:
    """What sample k of the vmap call sees."""
    return [samples[k][i] if i in batched else samples[0][i] for i in range(len(samples[0]))]


def _check(spec, samples, batched, in_dim, result, args) -> None:
    names = spec.argument_names()
    for k in range(BATCH):
        want = spec.reference(*_sample_args(samples, batched, k))
        want = want if isinstance(want, tuple) else (want,)
        if spec.mutates:
            got = [args[names.index(n)].select(in_dim, k) for n in spec.mutates]
        else:
            got = [r[k] for r in (result if isinstance(result, tuple) else (result,))]
        # (a mutating op's reference lists the written arguments first, then any outputs)
        for g, w in zip(got, want[: len(got)] if spec.mutates else want, strict=True):
            assert_matches(g, w, torch.float32, scale=4)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("in_dim", [0, 1])
@pytest.mark.parametrize("spec", specs.ALL, ids=repr)
def test_vmap_every_tensor_batched(spec, in_dim, call, device):
    samples = _samples(spec, device)
    batched = set(_tensor_positions(samples[0]))
    with torch.no_grad():
        result, args = _vmap_call(spec, call, samples, batched, in_dim)
    _check(spec, samples, batched, in_dim, result, args)


@pytest.mark.parametrize("spec", specs.ALL, ids=repr)
def test_vmap_some_tensors_unbatched(spec, device):
    """Each tensor argument left unbatched in turn (shared by every sample):
    refused where it is written in place (as PyTorch's in-place ops refuse
    it), else each sample sees it."""
    samples = _samples(spec, device)
    positions = _tensor_positions(samples[0])
    names = spec.argument_names()
    for shared in positions:
        if len(positions) == 1:
            break
        batched = set(positions) - {shared}
        with torch.no_grad():
            if names[shared] in spec.mutates:
                with pytest.raises(RuntimeError, match=rf"my_ops.{spec.name}: under vmap, argument "
                                                       rf"'{names[shared]}' is written in place but is not batched"):
                    _vmap_call(spec, "api", samples, batched, 0)
                continue
            result, args = _vmap_call(spec, "api", samples, batched, 0)
        _check(spec, samples, batched, 0, result, args)


@pytest.mark.parametrize("spec", specs.where(row_wise=True), ids=repr)
def test_vmap_runs_row_wise_ops_once(spec, device):
    """A batch over the rows runs the op once over all of them (no per-sample
    loop: PyTorch's fallback, or the rule's own for other batchings)."""
    samples = _samples(spec, device)
    names = spec.argument_names()
    rows = [i for i in _tensor_positions(samples[0]) if names[i] not in ("weight", "scale")]  # (not rows)
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        _vmap_call(spec, "torch.ops", samples, set(rows), 0)
    calls = [e for e in prof.events() if e.name == f"my_ops::{spec.name}"]
    if spec.name == "rms_norm_backward":  # its weight gradient sums over rows: once per sample
        assert len(calls) == BATCH + 1, [e.name for e in calls]
    else:  # the call vmap sees, and the one its rule makes
        assert len(calls) == 2, [e.name for e in calls]


def test_vmap_of_an_empty_batch(device):
    """A batch of no samples: an empty result of the per-sample shape."""
    x = torch.randn(0, 3, 8, device=device)
    w = torch.randn(0, 8, device=device)  # batched weight: the per-sample road
    with torch.no_grad():
        out = torch.vmap(my_ops.rms_norm, in_dims=(0, 0, None))(x, w, 1e-6)
    assert out.shape == (0, 3, 8)


@pytest.mark.parametrize("spec", specs.ALL, ids=repr)
def test_vmap_of_an_empty_batch_of_every_op(spec, device):
    """Every tensor argument batched with no samples (the per-sample road
    where a non-row, such as the weight, is batched): the outputs of one
    sample's shape and dtype behind a batch of 0, for the ops that write
    in place and return too."""
    sample = spec.resolve(make_input(spec.input_shape, torch.float32, device))
    positions = _tensor_positions(sample)
    empty = [a.new_zeros((0, *a.shape)) if i in positions else a for i, a in enumerate(sample)]
    in_dims = tuple(0 if i in positions else None for i in range(len(sample)))
    fn = spec.api or spec.op
    with torch.no_grad():
        want = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in sample])
        if want is None:
            assert torch.vmap(fn, in_dims=in_dims, out_dims=None)(*empty) is None
            return
        got = torch.vmap(fn, in_dims=in_dims)(*empty)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    assert [(g.shape, g.dtype) for g in got] == [((0, *w.shape), w.dtype) for w in want]


def test_vmap_refuses_samples_that_are_not_rows(device):
    """A batch of 0-D samples is not a batch of rows: refused as the op
    refuses a 0-D x (the batch is not taken for the hidden dimension)."""
    x, w = torch.randn(4, device=device), torch.randn(4, device=device)
    with pytest.raises(RuntimeError, match=r"my_ops.rms_norm: expected x to have at least 1 dimension"):
        torch.vmap(my_ops.rms_norm, in_dims=(0, None))(x, w)
    with pytest.raises(RuntimeError, match=r"my_ops.silu_and_mul: expected x to have at least 1 dimension"):
        torch.vmap(my_ops.silu_and_mul)(torch.randn(6, device=device))


def test_vmap_refusals_name_the_shapes_of_a_sample(device):
    with pytest.raises(RuntimeError, match=r"my_ops.mul: expected b to have the same shape as a \[4\], but got \[5\]"):
        torch.vmap(my_ops.mul)(torch.randn(3, 4, device=device), torch.randn(3, 5, device=device))


def test_vmap_per_sample_writes_must_not_overlap(device):
    """With a batched weight the in-place op runs once per sample; samples
    that share memory (an expanded x, x and residual views of one buffer) are
    refused first, as a single call over the batch refuses them."""
    B, H = 3, 8
    w = torch.randn(B, H, device=device)

    def run(x, r):
        def fused(x, r, w) -> None:
            my_ops.fused_add_rms_norm(x, r, w)

        torch.vmap(fused, out_dims=None)(x, r, w)

    x = torch.randn(H, device=device).expand(B, H)
    residual = torch.randn(B, H, device=device)
    before = residual.clone()
    with pytest.raises(RuntimeError, match=r"my_ops.fused_add_rms_norm: x is written in place, so its elements "
                                           r"must not share memory"):
        run(x, residual)
    assert torch.equal(residual, before), "written before refusing"
    base = torch.randn(B + 1, H, device=device)
    with pytest.raises(RuntimeError, match=r"my_ops.fused_add_rms_norm: x and residual must not share memory"):
        run(base[:B], base[1:])


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("weight_batched", [False, True])
def test_nested_vmap_of_an_in_place_op(call, weight_batched, device):
    """vmap over vmap of an in-place op: the inner level's rule sees tensors of
    the outer level, whose memory cannot be read, and leaves the memory rules
    to the outer level's call on real tensors: each sample written as the op
    writes it alone, overlapping samples refused as without the nesting."""
    B1, B2, H = 3, 2, 8
    op = torch.ops.my_ops.fused_add_rms_norm if call == "torch.ops" else my_ops.fused_add_rms_norm
    x = make_input((B1, B2, 4, H), torch.float32, device)
    residual = make_input((B1, B2, 4, H), torch.float32, device)
    w = make_input((B1, B2, H) if weight_batched else (H,), torch.float32, device)
    in_w = 0 if weight_batched else None

    def fused(x, r, w) -> None:
        op(x, r, w, 1e-6)

    got_x, got_r = x.clone(), residual.clone()
    torch.vmap(torch.vmap(fused, in_dims=(0, 0, in_w), out_dims=None),
               in_dims=(0, 0, in_w), out_dims=None)(got_x, got_r, w)
    for i in range(B1):
        for j in range(B2):
            want_x, want_r = reference.fused_add_rms_norm(
                x[i, j].double(), residual[i, j].double(), (w[i, j] if weight_batched else w).double(), 1e-6)
            assert_matches(got_x[i, j], want_x, torch.float32, scale=4)
            assert_matches(got_r[i, j], want_r, torch.float32, scale=4)
    base = make_input((B1, B2 + 1, 4, H), torch.float32, device)
    before = base.clone()
    with pytest.raises(RuntimeError, match=r"my_ops.fused_add_rms_norm: x and residual must not share memory"):
        torch.vmap(torch.vmap(fused, in_dims=(0, 0, in_w), out_dims=None),
                   in_dims=(0, 0, in_w), out_dims=None)(base[:, :B2], base[:, 1:], w)
    assert torch.equal(base, before), "written before refusing"
