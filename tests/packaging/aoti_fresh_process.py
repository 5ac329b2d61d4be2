"""A fresh Python process that loads an AOTInductor package of my_ops ops and
runs it, printing each step as it goes (so a crash shows how far it got):

    python -X faulthandler aoti_fresh_process.py PACKAGE INPUTS OUTPUTS DEVICE [options]

DEVICE: where the inputs go ("cpu", "cuda", "cuda:1"). Options:
  --no-import-my-ops      load without `import my_ops` (the refusal a user sees)
  --device-index N        aoti_load_package(..., device_index=N)
INPUTS: tensors saved with torch.save, [x, residual] per call; OUTPUTS gets,
per call, the output, then x and residual after the call, on the CPU.
Exits 0 when every call ran; on a refused load (my_ops.check_package's refusal
too) prints "refused: <error>" and exits 3.

tests/packaging/test_aoti.py runs it; it is also the diagnostic to run by hand.
"""

from __future__ import annotations

import argparse
import sys


def step(text: str) -> None:
    print(f"step: {text}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("package")
    parser.add_argument("inputs")
    parser.add_argument("outputs")
    parser.add_argument("device")
    parser.add_argument("--no-import-my-ops", action="store_true")
    parser.add_argument("--device-index", type=int, default=-1)
    args = parser.parse_args()

    step(f"python {sys.version.split()[0]}")
    import torch

    step(f"import torch {torch.__version__}: CUDA {torch.version.cuda}, "
         f"{torch.cuda.device_count() if torch.cuda.is_available() else 0} GPU(s)")
    try:
        if not args.no_import_my_ops:
            import my_ops  # registers the ops the package calls

            step(f"import my_ops {my_ops.__version__} from {my_ops.__file__} ({my_ops.library.label} library)")
            my_ops.check_package(args.package)  # before loading: whether this my_ops serves the package
            step("my_ops serves the package")
        model = torch._inductor.aoti_load_package(args.package, device_index=args.device_index)
    except RuntimeError as error:
        print(f"refused: {error}", flush=True)
        return 3
    step(f"loaded {args.package} (device_index {args.device_index}): "
         f"compiled for {model.get_metadata().get('AOTI_DEVICE_KEY')}")
    tensors = torch.load(args.inputs)
    results = []
    for call, (x, residual) in enumerate(zip(tensors[::2], tensors[1::2])):
        x, residual = x.to(args.device), residual.to(args.device)
        out = model(x, residual)
        results += [out.cpu(), x.cpu(), residual.cpu()]
        step(f"call {call}: {'x'.join(map(str, x.shape))} on {x.device} -> "
             f"{'x'.join(map(str, out.shape))} on {out.device}")
    torch.save(results, args.outputs)
    step("saved the outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
