"""rms_norm forward on rows that are not whole 16-byte vectors or not
16-byte aligned, next to aligned neighbours of the same size: which of the
CUDA paths (held vectors, covering vectors, generic) each case takes and what
it costs. bf16, 32768 rows, CUDA-graph replays of 32 calls over 8 input sets,
median of 15.

  python benchmarks/tuning/unaligned_rows.py
"""

import torch

import my_ops


def bench(make, label):
    sets = [make() for _ in range(8)]
    w = torch.rand(sets[0].shape[-1], device="cuda", dtype=torch.bfloat16) + 0.5
    for s in sets:
        my_ops.rms_norm(s, w, 1e-6)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(4):
            for s in sets:
                my_ops.rms_norm(s, w, 1e-6)
    times = []
    for _ in range(15):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / 32)
    times.sort()
    us = times[7]
    rows, hidden = sets[0].shape
    print(f"{label:40s} {us:8.1f} us  {2 * rows * hidden * 2 / us / 1e3:7.0f} GB/s")


R = 32768
bench(lambda: torch.randn(R, 4096, device="cuda", dtype=torch.bfloat16), "4096 aligned (512 vectors)")
bench(lambda: torch.randn(R, 4104, device="cuda", dtype=torch.bfloat16), "4104 aligned (513 vectors, 160 x 4)")
bench(lambda: torch.randn(R * 4096 + 8, device="cuda", dtype=torch.bfloat16)[1:R * 4096 + 1].view(R, 4096),
      "4096 at offset 1 (unaligned, 513 cov.)")
bench(lambda: torch.randn(R, 4097, device="cuda", dtype=torch.bfloat16), "4097 (unaligned, 514 cov.)")
bench(lambda: torch.randn(R, 4088, device="cuda", dtype=torch.bfloat16), "4088 aligned (511 vectors, 256 x 2)")
bench(lambda: torch.randn(R * 4088 + 8, device="cuda", dtype=torch.bfloat16)[1:R * 4088 + 1].view(R, 4088),
      "4088 at offset 1 (512 cov.)")
bench(lambda: torch.randn(R, 2880, device="cuda", dtype=torch.bfloat16), "2880 aligned (360 vectors)")
bench(lambda: torch.randn(R, 2881, device="cuda", dtype=torch.bfloat16), "2881 (unaligned)")
