"""Writes the ONNX importer fuzz target's seed models (fuzz/seeds/onnx_importer/):
a one-layer ViT-style encoder as torch exports it, at opset 13 (layernorm
decomposed) and 17 (LayerNormalization), and a patch embedding (a Conv whose
kernel is its stride). Small on purpose: a mutation of a small model runs fast.

    /usr/bin/python3 fuzz/seeds/write_onnx_seeds.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
import vit_onnx  # noqa: E402

OUT = os.path.join(HERE, "onnx_importer")


def encoders():
    vit_onnx.TOKENS, vit_onnx.WIDTH, vit_onnx.HEADS, vit_onnx.HIDDEN = 4, 8, 2, 16
    params = vit_onnx.weights(1)
    for opset in (13, 17):
        vit_onnx.encoder_model(params, opset, os.path.join(OUT, f"encoder_opset{opset}.onnx"))


def patch_embedding():
    rng = np.random.default_rng(3)
    kernel = numpy_helper.from_array((rng.standard_normal((4, 3, 2, 2)) * 0.25).astype(np.float32), "kernel")
    bias = numpy_helper.from_array(np.zeros(4, np.float32), "bias")
    conv = helper.make_node("Conv", ["image", "kernel", "bias"], ["patches"], name="embed", kernel_shape=[2, 2], strides=[2, 2])
    flat = helper.make_node("Flatten", ["patches"], ["y"], name="flatten", axis=2)
    graph = helper.make_graph([conv, flat], "patch_embedding",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4])], [kernel, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, "patch_embedding.onnx"))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    encoders()
    patch_embedding()
