"""A small ViT-style encoder as torch.onnx.export writes it, and the same network in NumPy."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOKENS, WIDTH, HEADS, HIDDEN = 40, 64, 4, 128
EPSILON = 1e-6


def weights(layers, seed=0):
    rng = np.random.default_rng(seed)
    def draw(*shape, scale=0.125):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    result = []
    for _ in range(layers):
        result.append({
            "ln1_g": 1 + draw(WIDTH), "ln1_b": draw(WIDTH),
            "wq": draw(WIDTH, WIDTH), "bq": draw(WIDTH), "wk": draw(WIDTH, WIDTH), "bk": draw(WIDTH),
            "wv": draw(WIDTH, WIDTH), "bv": draw(WIDTH), "wo": draw(WIDTH, WIDTH), "bo": draw(WIDTH),
            "ln2_g": 1 + draw(WIDTH), "ln2_b": draw(WIDTH),
            "w1": draw(WIDTH, HIDDEN), "b1": draw(HIDDEN), "w2": draw(HIDDEN, WIDTH), "b2": draw(WIDTH),
        })
    return result


class Writer:
    """Nodes and initializers with torch-style names (/layers.0/attn/MatMul_output_0)."""

    def __init__(self):
        self.nodes, self.initializers, self.count = [], [], 0

    def constant(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, prefix, **attributes):
        self.count += 1
        output = f"{prefix}/{op}_{self.count}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"{prefix}/{op}_{self.count}", **attributes))
        return output

    def int_constant(self, values, prefix):
        self.count += 1
        name = f"{prefix}/Constant_{self.count}_output_0"
        self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(values, np.int64))))
        return name

    def layernorm(self, x, g, b, prefix, opset):
        if opset >= 17:
            return self.node("LayerNormalization", [x, g, b], prefix, axis=-1, epsilon=EPSILON)
        mean = self.node("ReduceMean", [x], prefix, axes=[-1])
        centred = self.node("Sub", [x, mean], prefix)
        square = self.node("Pow", [centred, self.constant(f"{prefix}.two", np.float32(2))], prefix)
        variance = self.node("ReduceMean", [square], prefix, axes=[-1])
        shifted = self.node("Add", [variance, self.constant(f"{prefix}.eps", np.float32(EPSILON))], prefix)
        normalised = self.node("Div", [centred, self.node("Sqrt", [shifted], prefix)], prefix)
        return self.node("Add", [self.node("Mul", [normalised, g], prefix), b], prefix)

    def linear(self, x, w, b, prefix):
        # torch writes the bias first: Add(bias, MatMul(x, W^T)).
        return self.node("Add", [b, self.node("MatMul", [x, w], prefix)], prefix)

    def heads(self, x, prefix, keys=False):
        # The target shape as torch computes it from x.size(0): Shape, Gather, Unsqueeze, Concat.
        batch = self.node("Gather", [self.node("Shape", [x], prefix), self.int_constant(0, prefix)], prefix, axis=0)
        batch = self.node("Unsqueeze", [batch, self.int_constant([0], prefix)], prefix)
        shape = self.node("Concat", [batch, self.int_constant([TOKENS, HEADS, WIDTH // HEADS], prefix)], prefix, axis=0)
        split = self.node("Reshape", [x, shape], prefix)
        return self.node("Transpose", [split], prefix, perm=[0, 2, 3, 1] if keys else [0, 2, 1, 3])

    def attention(self, x, p, prefix):
        q = self.heads(self.linear(x, p["wq"], p["bq"], prefix), prefix)
        k = self.heads(self.linear(x, p["wk"], p["bk"], prefix), prefix, keys=True)
        v = self.heads(self.linear(x, p["wv"], p["bv"], prefix), prefix)
        scores = self.node("Div", [self.node("MatMul", [q, k], prefix),
                                   self.constant(f"{prefix}.scale", np.float32(np.sqrt(WIDTH // HEADS)))], prefix)
        probabilities = self.node("Softmax", [scores], prefix, axis=-1)
        merged = self.node("Transpose", [self.node("MatMul", [probabilities, v], prefix)], prefix, perm=[0, 2, 1, 3])
        merged = self.node("Reshape", [merged, self.int_constant([1, TOKENS, WIDTH], prefix)], prefix)
        return self.linear(merged, p["wo"], p["bo"], prefix)

    def gelu(self, x, prefix):
        erf = self.node("Erf", [self.node("Div", [x, self.constant(f"{prefix}.root2", np.float32(1.4142135381698608))], prefix)], prefix)
        gate = self.node("Add", [erf, self.constant(f"{prefix}.one", np.float32(1))], prefix)
        return self.node("Mul", [self.node("Mul", [x, gate], prefix), self.constant(f"{prefix}.half", np.float32(0.5))], prefix)


def encoder_model(params, opset, path):
    w = Writer()
    x = "x"
    for i, layer in enumerate(params):
        prefix = f"/layers.{i}"
        names = {key: w.constant(f"layers.{i}.{key}", value) for key, value in layer.items()}
        attended = w.attention(w.layernorm(x, names["ln1_g"], names["ln1_b"], prefix + "/ln1", opset), names, prefix + "/attn")
        x = w.node("Add", [x, attended], prefix)
        hidden = w.gelu(w.linear(w.layernorm(x, names["ln2_g"], names["ln2_b"], prefix + "/ln2", opset),
                                 names["w1"], names["b1"], prefix + "/mlp"), prefix + "/mlp")
        x = w.node("Add", [x, w.linear(hidden, names["w2"], names["b2"], prefix + "/mlp")], prefix)
    w.nodes.append(helper.make_node("Identity", [x], ["y"], name="output"))
    graph = helper.make_graph(w.nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, TOKENS, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, TOKENS, WIDTH])], w.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def encoder_numpy(params, x):
    """The same network in float64."""
    from math import erf
    erf = np.vectorize(erf)
    def layernorm(v, g, b):
        mean = v.mean(-1, keepdims=True)
        return (v - mean) / np.sqrt(((v - mean) ** 2).mean(-1, keepdims=True) + EPSILON) * g + b
    def heads(v):
        return v.reshape(1, TOKENS, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3)
    x = x.astype(np.float64)
    for p in params:
        p = {k: v.astype(np.float64) for k, v in p.items()}
        h = layernorm(x, p["ln1_g"], p["ln1_b"])
        q, k, v = (heads(h @ p["w" + n] + p["b" + n]) for n in "qkv")
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(WIDTH // HEADS)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attended = (scores / scores.sum(-1, keepdims=True)) @ v
        x = x + attended.transpose(0, 2, 1, 3).reshape(1, TOKENS, WIDTH) @ p["wo"] + p["bo"]
        hidden = layernorm(x, p["ln2_g"], p["ln2_b"]) @ p["w1"] + p["b1"]
        x = x + (0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))) @ p["w2"] + p["b2"]
    return x
