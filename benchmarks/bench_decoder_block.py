"""A Llama-style decoder block as a model runs it, torch's ops against my_ops'.

The block: RMSNorm -> QKV projection -> causal attention (SDPA) -> output
projection -> residual add -> RMSNorm -> gate/up projection -> SwiGLU -> down
projection -> residual add, bf16, hidden 4096, intermediate 11008, 32 heads.
The two providers differ only in the norm and activation ops:

* torch:  `nn.RMSNorm`, `F.silu(gate) * up`, and the residual adds;
* my_ops: `my_ops.RMSNorm`, `my_ops.silu_and_mul`, and in inference
  `my_ops.fused_add_rms_norm` for the first residual add and the second norm.

In inference both blocks add the attention output into their input in place,
as vLLM's layers update their residual (nothing else reads a layer's input
there): torch's block by `x.add_(attn)` before its norm, my_ops' inside the
fused op. So both run on the same drifting residual stream call after call,
and the comparison isolates the ops. (Copying the input first, to keep it,
cost my_ops a pass over it that torch's compiled add + norm does not make.)
Training differentiates the block's input as well as its parameters, as a
layer inside a model does.

Each in eager mode and under `torch.compile`, in three modes: a prefill
forward (tokens of whole sequences), a decode step under CUDA graphs (one new
token per sequence, attending to a 1024-token cache kept in place), and a training step
(forward + backward, parameters and activations in bf16). The matrix products
dominate the block; what the table shows is how much of each op's own win
survives in a model, and whether the custom ops cost inductor a fusion.
Time per block call; GB/s is not meaningful here and left empty.
"""

from __future__ import annotations

import math
import statistics

import torch
import torch.nn.functional as F
from torch import nn

import my_ops
from common import Row, time_events, time_graph

HIDDEN, INTERMEDIATE, HEADS, EPS = 4096, 11008, 32, 1e-6
CACHE = 1024
# Rounds per case, each provider timed once a round, the order reversed every
# round: the GPU's clock drifts over a run (H100: the same block's matrix
# products took up to 8% longer timed after the other provider than before it),
# which one fixed order would charge to whichever provider comes last; the
# spread of the per-round ratios shows what a difference has to exceed.
ROUNDS = 6
BASELINES = {("decoder_block", mode): "torch eager" for mode in ("prefill", "decode", "train")}


class Block(nn.Module):
    def __init__(self, impl: str, residual_in_place: bool):
        super().__init__()
        self.impl, self.residual_in_place = impl, residual_in_place
        norm = nn.RMSNorm if impl == "torch" else my_ops.RMSNorm
        self.norm1, self.norm2 = norm(HIDDEN, eps=EPS), norm(HIDDEN, eps=EPS)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.o = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.gate_up = nn.Linear(HIDDEN, 2 * INTERMEDIATE, bias=False)
        self.down = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def attention(self, h, cache):
        batch, tokens, _ = h.shape
        q, k, v = self.qkv(h).view(batch, tokens, 3, HEADS, HIDDEN // HEADS).transpose(1, 3).unbind(2)
        if cache is not None:  # decode: the new token joins the cache's last slot and attends to all of it
            cache[0][:, :, -tokens:].copy_(k)
            cache[1][:, :, -tokens:].copy_(v)
            k, v = cache
        out = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        return self.o(out.transpose(1, 2).reshape(batch, tokens, HIDDEN))

    def mlp(self, h):
        gate_up = self.gate_up(h)
        if self.impl == "torch":
            gate, up = gate_up.chunk(2, dim=-1)
            return self.down(F.silu(gate) * up)
        return self.down(my_ops.silu_and_mul(gate_up))

    def forward(self, x, cache=None):
        attn = self.attention(self.norm1(x), cache)
        if self.residual_in_place and self.impl == "my_ops":  # x += attn; attn = rms_norm(x), both in place
            my_ops.fused_add_rms_norm(attn, x, self.norm2.weight, EPS)
            return x + self.mlp(attn)
        if self.residual_in_place:
            x.add_(attn)
        else:
            x = x + attn
        return x + self.mlp(self.norm2(x))


def _blocks(device, train: bool) -> dict[str, nn.Module]:
    torch.manual_seed(0)
    reference = Block("torch", residual_in_place=not train).to(device, torch.bfloat16)
    blocks = {"torch": reference, "my_ops": Block("my_ops", residual_in_place=not train).to(device, torch.bfloat16)}
    blocks["my_ops"].load_state_dict(reference.state_dict())
    for block in blocks.values():
        block.train(train).requires_grad_(train)
    return blocks


def _providers(blocks: dict[str, nn.Module]) -> dict[str, nn.Module]:
    out = {}
    for name, block in blocks.items():
        out[f"{name} eager"] = block
        out[f"{name} compile"] = torch.compile(block, fullgraph=True)
    return out


def _check(want: torch.Tensor, got: torch.Tensor, what: str) -> None:
    # bf16 through two projections and attention: compare relative to the output's scale
    error = (got.float() - want.float()).abs().max().item() / max(want.float().abs().max().item(), 1e-6)
    if not error < 0.05 or not torch.isfinite(got).all():
        raise AssertionError(f"decoder block {what}: output differs from torch's by {error:.3g} of its scale")


def _run_mode(device, mode: str, batch: int, tokens: int) -> list[Row]:
    train = mode == "train"
    providers = _providers(_blocks(device, train))
    x = torch.randn(batch, tokens, HIDDEN, device=device, dtype=torch.bfloat16)
    cache = None
    if mode == "decode":
        shape = (batch, HEADS, CACHE + tokens, HIDDEN // HEADS)
        cache = (torch.randn(shape, device=device, dtype=torch.bfloat16),
                 torch.randn(shape, device=device, dtype=torch.bfloat16))
    timed = {}
    # (inference as servers run it: under inference_mode, which skips the autograd and
    # version-counter work that no_grad still does; tuning/decoder_block_host.py times both)
    with torch.enable_grad() if train else torch.inference_mode():
        want = providers["torch eager"](x.clone(), cache)  # (an inference block updates its input)
        grad = torch.randn_like(want)
        for name, block in providers.items():
            _check(want, block(x.clone(), cache), name)
            if train:
                params = [p for p in block.parameters()]

                def call(s, block=block, params=params):
                    return torch.autograd.grad(block(s[0]), [*params, s[0]], grad)
            else:
                def call(s, block=block):
                    return block(s[0], cache)
            # each provider its own input: an inference block adds each call's attention into it
            timed[name] = (call, [(x.clone().requires_grad_(train),)], [])
        for round_ in range(ROUNDS):
            for name in list(timed) if round_ % 2 == 0 else list(reversed(timed)):
                call, sets, times = timed[name]
                # decode: CUDA graphs, as servers replay decode steps; else events over 10 queued calls
                times.append(time_graph(call, sets, replays=10) if mode == "decode" else
                             time_events(call, sets, reps=10))
    how = "cuda-graph" if mode == "decode" else "events behind a lead call"
    rows = []
    for name, (_, _, times) in timed.items():
        spread = ""
        if name.startswith("my_ops"):
            ratios = [mine / theirs for mine, theirs in zip(times, timed[name.replace("my_ops", "torch")][2])]
            spread = f", my_ops/torch per round {min(ratios):.3f}-{max(ratios):.3f}"
        rows.append(Row(str(device), "decoder_block", mode, "bfloat16", f"{batch}x{tokens}x{HIDDEN}", name,
                        statistics.mean(times), math.nan,
                        timing=f"{how}, mean of {ROUNDS} rounds in alternating orders{spread}"))
    return rows


def _cases(quick: bool) -> list[tuple[str, int, int]]:
    cases = [("prefill", 8, 2048), ("decode", 64, 1), ("train", 1, 4096)]
    return cases if quick else cases + [("prefill", 1, 4096), ("train", 8, 2048)]


def _case_rows(device: torch.device, mode: str, batch: int, tokens: int) -> list[Row]:
    torch.compiler.reset()  # each mode compiles new block instances of one forward
    rows = _run_mode(device, mode, batch, tokens)
    torch.cuda.empty_cache()
    return rows


def run(device: torch.device, quick: bool = False) -> list[Row]:
    if device.type != "cuda":
        return []  # a 200M-parameter block per provider: a GPU benchmark
    return [row for case in _cases(quick) for row in _case_rows(device, *case)]


if __name__ == "__main__":
    import sys

    for case in _cases(quick="--quick" in sys.argv):  # printed case by case (printed only: run.py records)
        rows = _case_rows(torch.device("cuda"), *case)
        base = {r.provider: r.time_us for r in rows}
        for row in rows:
            versus = base[row.provider.replace("my_ops", "torch")]
            print(f"{row.mode:<8}{row.shape:<16}{row.provider:<16}{row.time_us:>10.1f} us  "
                  f"{row.time_us / versus:6.3f} of torch  ({row.timing})", flush=True)
