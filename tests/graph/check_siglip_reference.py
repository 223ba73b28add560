#!/usr/bin/python3
"""Recomputes the SigLIP MLP output from a `tilec reference --dump DIR` in NumPy.

Reads x, W1, W2 (FP8 codes, decoded here from the F143 definition with the
scale that manifest.json records; or f16/f32 data) and computes
y = gelu_tanh(x W1) W2 with tilec's per-op rounding: GEMM results and GELU
stored as FP16 and h as F143 with scale -4 at fp8 precision; fp16 and fp32
store every result in their own type.

GEMMs are summed as tilec's reference defines them: for each output, the
sequential float32 sum over k = 0, 1, ... of the products, from +0. The
products of FP8 and FP16 values are exact in float32, so a multiply and an
add here are the reference's fused multiply-add. The checks are then exact:
- per op, given tilec's own operands (needs --intermediates in the dump):
  each GEMM, GELU (with the C library's tanhf) and the F143 cast bit-exact;
- end to end: the largest difference on y below 1e-3 (it is 0 when the
  two agree bit for bit, as they should).
Prints the largest differences and exits 1 when a check fails.
"""

import argparse
import ctypes
import ctypes.util
import json
import os
import sys

import numpy as np

F143_BIAS = 8
F143_MANTISSA_BITS = 3
F143_LARGEST = 240.0
HIDDEN_FP8_SCALE = -4  # graph/workloads.h: kHiddenFp8Scale


def f143_values():
    """The value of each code 0..255 (no scale); NaN for 0x80."""
    values = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent = (code >> F143_MANTISSA_BITS) & 0xF
        mantissa = code & 0x7
        if exponent == 0:
            magnitude = mantissa * 2.0 ** (1 - F143_BIAS - F143_MANTISSA_BITS)
        else:
            magnitude = (8 + mantissa) * 2.0 ** (exponent - F143_BIAS - F143_MANTISSA_BITS)
        values[code] = sign * magnitude
    values[0x80] = np.nan
    return values


def decode_f143(codes, scale):
    return (f143_values()[codes] * 2.0 ** scale).astype(np.float32)


def round_to_f143(values, scale):
    """Stores float32 values as F143 with `scale` and reads them back:
    nearest value, ties to the even code, saturating at 240 x 2^scale."""
    table = f143_values()[:0x80]  # positive codes, ascending values
    scaled = np.abs(values.astype(np.float64)) * 2.0 ** -scale
    scaled = np.minimum(scaled, F143_LARGEST)
    upper = np.clip(np.searchsorted(table, scaled, side="left"), 1, 0x7F)
    lower = upper - 1
    below, above = table[lower], table[upper]
    midpoint = (below + above) / 2
    take_upper = (scaled > midpoint) | ((scaled == midpoint) & (lower % 2 == 1))
    code = np.where(take_upper, upper, lower)
    code = np.where(scaled >= table[upper], upper, code)
    magnitude = table[code] * 2.0 ** scale
    return (np.sign(values) * magnitude).astype(np.float32)


def round_to(values, element):
    """Stores float32 values as FP16 (or FP32) and reads them back."""
    if element == "f16":
        return values.astype(np.float32).astype(np.float16).astype(np.float32)
    return values.astype(np.float32)


def c_tanhf(values):
    """tanh in single precision as the C library computes it (tilec calls
    std::tanh(float)), evaluated once per distinct value."""
    tanhf = ctypes.CDLL(ctypes.util.find_library("m")).tanhf
    tanhf.restype = ctypes.c_float
    tanhf.argtypes = [ctypes.c_float]
    distinct, where = np.unique(values, return_inverse=True)
    results = np.array([tanhf(float(value)) for value in distinct], dtype=np.float32)
    return results[where].reshape(values.shape)


def gelu_tanh(x):
    """As numerics/reference_ops.cpp computes it, operation by operation in float32."""
    x = x.astype(np.float32)
    inner = np.float32(0.7978845608028654) * (x + np.float32(0.044715) * x * x * x)
    return np.float32(0.5) * x * (np.float32(1.0) + c_tanhf(inner))


def load(directory):
    """name -> (float32 values, manifest entry) for every tensor of a dump directory."""
    if not os.path.exists(os.path.join(directory, "manifest.json")):
        return {}
    with open(os.path.join(directory, "manifest.json")) as file:
        manifest = json.load(file)
    tensors = {}
    for entry in manifest["tensors"]:
        data = np.load(os.path.join(directory, entry["file"]))
        if entry["element"] == "f143":
            tensors[entry["name"]] = (decode_f143(data, entry["scale"]), entry)
        else:
            tensors[entry["name"]] = (data.astype(np.float32), entry)
    return tensors


def gemm(a, b, element):
    """Sequential float32 sums over k (vectorised over the outputs)."""
    a = a.astype(np.float32)
    b = b.astype(np.float32)
    total = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):
        total += a[:, k:k + 1] * b[k:k + 1, :]
    return round_to(total, element)



class Report:
    def __init__(self):
        self.failed = False

    def exact(self, what, ours, theirs):
        differing = int(np.count_nonzero(ours != theirs))
        print(f"{what}: {differing} of {ours.size} elements differ")
        self.failed |= differing > 0

    def end_to_end(self, ours, theirs):
        difference = np.abs(ours - theirs)
        differing = int(np.count_nonzero(difference))
        largest = float(difference.max())
        print(f"y end to end: {differing} of {difference.size} elements differ, "
              f"max abs difference {largest:.3g}")
        self.failed |= not largest < 1e-3


def rows_of(tensor, stride):
    return tensor.reshape(-1, tensor.shape[-1])[::stride]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--row-stride", type=int, default=1,
                        help="check every Nth token row (each row of y depends only on its row of x)")
    args = parser.parse_args()

    tensors = load(args.directory)
    x, x_entry = tensors["x"]
    w1, _ = tensors["W1"]
    w2, _ = tensors["W2"]
    y_tilec, y_entry = tensors["y"]
    fp8 = x_entry["element"] == "f143"
    activation = y_entry["element"]
    rows = rows_of(x, args.row_stride)
    report = Report()
    print(f"checking {rows.shape[0]} token rows")

    first_gemm = gemm(rows, w1, activation)
    steps = load(os.path.join(args.directory, "intermediates"))
    if steps:
        gemm1 = rows_of(steps["gemm1"][0], args.row_stride)
        gelu = rows_of(steps["gelu"][0], args.row_stride)
        gemm2_input = gelu
        report.exact("gemm1", first_gemm, gemm1)
        report.exact("gelu", round_to(gelu_tanh(gemm1), activation), gelu)
        if fp8:
            gemm2_input = rows_of(steps["gelu_f143"][0], args.row_stride)
            report.exact("gelu_f143", round_to_f143(gelu, HIDDEN_FP8_SCALE), gemm2_input)
        report.exact("gemm2", gemm(gemm2_input, w2, activation), rows_of(steps["gemm2"][0], args.row_stride))

    h = round_to(gelu_tanh(first_gemm), activation)
    if fp8:
        h = round_to_f143(h, HIDDEN_FP8_SCALE)
    report.end_to_end(gemm(h, w2, activation), rows_of(y_tilec, args.row_stride))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
