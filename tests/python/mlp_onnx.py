"""A tilec MLP graph (its JSON form) written as the ONNX model an exporter would write."""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import tilec

ONNX_TYPES = {"f32": (TensorProto.FLOAT, np.float32), "f16": (TensorProto.FLOAT16, np.float16)}


def export(graph, path):
    doc = json.loads(graph.json())
    data = graph.params()
    shapes = {name: list(array.shape) for name, array in tilec.reference(graph, {}).items()}
    nodes, initializers, constants = [], [], {}

    def constant(value, dtype):
        name = f"c{len(constants)}_{value}"
        constants[name] = True
        initializers.append(numpy_helper.from_array(np.array(value, dtype), name))
        return name

    def node(op, inputs, output, **attributes):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    for p in doc["parameters"]:
        initializers.append(numpy_helper.from_array(data[p["name"]].astype(ONNX_TYPES[p["type"]][1]), p["name"]))
    for op in doc["ops"]:
        kind, name = op["op"], op["name"]
        dtype = ONNX_TYPES[op["type"]][1]
        if kind == "gemm":
            assert not op.get("transpose_a") and not op.get("transpose_b")
            node("MatMul", [op["a"], op["b"]], name)
        elif kind == "add":
            node("Add", [op["a"], op["b"]], name)
        elif kind == "cast":
            node("Cast", [op["x"]], name, to=ONNX_TYPES[op["type"]][0])
        elif kind == "gelu":
            # GELU has no ONNX op before opset 20: the tanh form, as exporters decompose it.
            assert op["approximation"] == "tanh"
            x = op["x"]
            cube = node("Pow", [x, constant(3.0, dtype)], name + "/pow")
            inner = node("Add", [x, node("Mul", [cube, constant(0.044715, dtype)], name + "/cubic")], name + "/inner")
            gate = node("Tanh", [node("Mul", [inner, constant(np.sqrt(2 / np.pi), dtype)], name + "/scaled")], name + "/tanh")
            half = node("Mul", [x, constant(0.5, dtype)], name + "/half")
            node("Mul", [half, node("Add", [gate, constant(1.0, dtype)], name + "/gate")], name)
        else:
            raise ValueError(f"no ONNX form for {kind}")
    outputs = []
    for output in doc["outputs"]:
        name, value = (output, output) if isinstance(output, str) else (output["name"], output["value"])
        if name != value:
            node("Identity", [value], name)
        outputs.append(name)
    value_type = {op["name"]: op["type"] for op in doc["ops"]}
    graph_proto = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info(i["name"], ONNX_TYPES[i["type"]][0], i["shape"]) for i in doc["inputs"]],
        [helper.make_tensor_value_info(name, ONNX_TYPES[value_type[v["value"] if isinstance(v, dict) else v]][0], shapes[name])
         for name, v in zip(outputs, doc["outputs"])],
        initializers)
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
