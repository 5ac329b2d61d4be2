"""The compiled decoder block at a prefill (1 x 4096 tokens, or --shape), torch's ops against
my_ops' (benchmarks/bench_decoder_block.py): the host time to queue one
compiled call (perf_counter, the GPU idle before it), the time a call over
10 calls queued back to back (common.time_events, the benchmark's timing),
and the time a call in CUDA-graph replays (common.time_graph: the device
alone, no host time at all), under torch.no_grad() and
torch.inference_mode(), twice each, the second round in the other order.
Then, with --profile, the CUDA kernels of one compiled call of each block by
device time (torch.profiler), in both orders: whether the blocks differ in
kernels (a fusion barrier) or in host time; with --train-profile, those of a
compiled training step (forward and backward).

  python benchmarks/tuning/decoder_block_host.py [--profile] [--train-profile] [--shape 8x2048] [--no-timing]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_decoder_block as block_bench  # noqa: E402
from common import time_events, time_graph  # noqa: E402

DEVICE = torch.device("cuda")
CONTEXTS = [("no_grad", torch.no_grad), ("inference_mode", torch.inference_mode)]
# (sequences, tokens each) of the prefill
SHAPE = (tuple(int(n) for n in sys.argv[sys.argv.index("--shape") + 1].split("x"))
         if "--shape" in sys.argv else (1, 4096))


def compiled_blocks(order: int, train: bool = False):
    torch.compiler.reset()
    blocks = list(block_bench._blocks(DEVICE, train=train).items())
    return [(name, torch.compile(b, fullgraph=True)) for name, b in (blocks if order == 0 else blocks[::-1])]


def host_and_events(order: int, context) -> dict[str, tuple[float, float, float]]:
    x0 = torch.randn(*SHAPE, block_bench.HIDDEN, device=DEVICE, dtype=torch.bfloat16)
    out = {}
    with context():
        for name, block in compiled_blocks(order):
            x = x0.clone()  # (an inference block adds into its input)
            for _ in range(5):
                block(x)
            torch.cuda.synchronize()
            host = []
            for _ in range(20):
                start = time.perf_counter()
                block(x)
                host.append((time.perf_counter() - start) * 1e6)
                torch.cuda.synchronize()
            queued = statistics.mean(time_events(lambda s, block=block: block(s[0]), [(x,)]) for _ in range(2))
            graphed = time_graph(lambda s, block=block: block(s[0]), [(x,)])
            out[name] = (statistics.median(host), queued, graphed)
    return out


def profile_kernels(train: bool) -> None:
    """The CUDA kernels of a compiled block's call (train: a training step,
    forward and backward to the parameters and the input) by device time."""
    from torch.profiler import ProfilerActivity, profile

    x0 = torch.randn(*SHAPE, block_bench.HIDDEN, device=DEVICE, dtype=torch.bfloat16)
    with torch.enable_grad() if train else torch.no_grad():
        for order in (0, 1):
            for name, block in compiled_blocks(order, train):
                x = x0.clone().requires_grad_(train)
                if train:
                    grad, params = torch.randn_like(x), list(block.parameters())

                    def call(block=block, x=x, grad=grad, params=params):
                        return torch.autograd.grad(block(x), [*params, x], grad)
                else:
                    def call(block=block, x=x):
                        return block(x)
                for _ in range(3):
                    call()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        call()
                    torch.cuda.synchronize()
                events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
                print(f"=== {name} compile{' training step' if train else ''}: "
                      f"{sum(e.device_time_total for e in events) / 5:.1f} us of kernels a call")
                for e in sorted(events, key=lambda e: -e.device_time_total)[:24 if train else 12]:
                    print(f"  {e.count // 5:3d} x {e.device_time_total / 5:8.1f} us  {e.key[:90]}")


if __name__ == "__main__":
    print(f"prefill of {SHAPE[0]} x {SHAPE[1]} tokens", flush=True)
    for order in () if "--no-timing" in sys.argv else (0, 1):
        for label, context in CONTEXTS:
            r = host_and_events(order, context)
            print(f"{label:15s} host us to queue a call: torch {r['torch'][0]:.0f}, my_ops {r['my_ops'][0]:.0f};  "
                  f"us a call, 10 queued: torch {r['torch'][1]:.1f}, my_ops {r['my_ops'][1]:.1f} "
                  f"-> {r['my_ops'][1] / r['torch'][1]:.3f};  graph replays: torch {r['torch'][2]:.1f}, "
                  f"my_ops {r['my_ops'][2]:.1f} -> {r['my_ops'][2] / r['torch'][2]:.3f}", flush=True)
    if "--profile" in sys.argv:
        profile_kernels(train=False)
    if "--train-profile" in sys.argv:
        profile_kernels(train=True)
