#!/usr/bin/env python3
"""Writes .pth files with the live PyTorch for test_pth.cpp (pth_tests).

Usage: pth_fixtures.py OUTDIR

Each file is saved the way the book (ch. 5) saves one, or a variation the
reader must handle (F16/BF16/F64 storages, views with strides and offsets
into one shared storage, nn.Parameter values, a training checkpoint with
Adam's state after one step), plus files it must refuse. expected.json
gives, per file, the tensors the reader must find: dtype, shape, stride,
storage offset and the values as float32 in C order. Without PyTorch it
writes nothing and exits 0: the tests that need the files then skip.
"""
import json
import os
import sys

try:
    import torch
except ImportError:
    print("pth_fixtures: PyTorch is not installed; the PthTorch tests skip", file=sys.stderr)
    sys.exit(0)

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.float64: "F64", torch.int64: "I64"}


def describe(state):
    out = {}
    for name, t in state.items():
        entry = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "stride": list(t.stride()),
                 "offset": t.storage_offset()}
        if t.is_floating_point():
            entry["values"] = [float(v) for v in t.detach().float().contiguous().reshape(-1)]
        out[name] = entry
    return out


class CallsPrint:
    """Pickles as a call to builtins.print: not something a state_dict does."""

    def __reduce__(self):
        return (print, ("a .pth file must not run this",))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(123)
    expected = {}

    def save(name, obj, state=None, dict_key="", **kwargs):
        torch.save(obj, os.path.join(out, name), **kwargs)
        if state is not None:
            expected[name] = {"dict_key": dict_key, "tensors": describe(state)}

    # The book's bare state_dict: model.state_dict() of F32 tensors.
    model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.Linear(4, 3),
                                torch.nn.LayerNorm(3))
    save("state_dict.pth", model.state_dict(), model.state_dict())

    # Half, bfloat16, double and int64 storages.
    halves = {"h": torch.randn(2, 3).half(), "b": torch.randn(3, 2).bfloat16(),
              "d": torch.randn(4).double(), "i": torch.arange(3)}
    save("dtypes.pth", halves, halves)

    # Views of one storage: torch.save keeps their strides and offsets.
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    views = {"x": x, "t": x.t(), "row": x[1], "col": x[:, 2], "scalar": x[2, 3],
             "every_other": x[:, ::2]}
    save("views.pth", views, views)

    # Pickle protocol 4 (FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL) and a
    # memo past 255 entries (LONG_BINPUT, LONG_BINGET).
    save("protocol4.pth", views, views, pickle_protocol=4)
    many = torch.nn.ModuleList(torch.nn.Linear(2, 2) for _ in range(60))
    save("long_memo.pth", many.state_dict(), many.state_dict())

    # Parameters, as torch.save({name: nn.Parameter}) writes them.
    params = {"w": torch.nn.Parameter(torch.randn(2, 2))}
    save("parameter.pth", params, params)

    # The book's training checkpoint: model and Adam's state after one step.
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss = model(torch.tensor([[0, 2, 4]])).pow(2).sum()
    loss.backward()
    opt.step()
    save("checkpoint.pth", {"model_state_dict": model.state_dict(),
                            "optimizer_state_dict": opt.state_dict()},
         model.state_dict(), "model_state_dict")

    # Files the reader refuses.
    save("legacy.pth", model.state_dict(), _use_new_zipfile_serialization=False)
    save("list.pth", [1, 2.5, "three"])
    save("optimizer_only.pth", opt.state_dict())
    save("calls_print.pth", {"w": torch.ones(2), "hook": CallsPrint()})
    save("whole_model.pth", model)

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main()
