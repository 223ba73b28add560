"""The tilec Python module: NumPy round trips, an ONNX model built here, bad input."""
import os
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import tilec

TMP = os.environ.get("TEST_TMPDIR", tempfile.gettempdir())


def linear_model(path, dynamic=False):
    """y = relu(x W + b) as an ONNX file."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 32)).astype(np.float32) * 0.25
    b = rng.standard_normal(32).astype(np.float32) * 0.1
    batch = "batch" if dynamic else 16
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w, b


class ModuleTest(unittest.TestCase):
    def test_workload_round_trip_through_numpy(self):
        graph = tilec.workload("mlp", precision="fp16")
        self.assertEqual(graph.outputs, ["y"])
        data = graph.params()
        x = data["x"]
        reference = tilec.reference(graph, {"x": x})["y"]
        package = graph.compile(target="ipu21:16")
        self.assertGreater(package.estimated_cycles, 0)
        outputs, report = package.run({"x": x})
        self.assertEqual(report["status"], "pass")
        self.assertEqual(report["case"], "fp16-b1-n1-default")
        self.assertGreater(report["cycles"], 0)
        # The built program's estimate tracks the simulator; the search's figure is reported beside it.
        self.assertLess(abs(package.estimated_cycles / report["cycles"] - 1), 0.03)
        self.assertGreater(package.search_estimated_cycles, 0)
        self.assertEqual(outputs["y"].dtype, np.float32)
        self.assertEqual(outputs["y"].shape, reference.shape)
        self.assertLess(np.abs(outputs["y"] - reference).max(), 0.03 + 0.05 * np.abs(reference).max())
        saved = os.path.join(TMP, "python_mlp.tpk")
        package.save(saved)
        self.assertGreater(os.path.getsize(saved), 0)

    def test_tower_workload_takes_layers_and_head(self):
        tower = tilec.workload("vit", precision="fp16", layers=1, head=False)
        package = tower.compile(target="ipu21:16")
        outputs, report = package.run({name: tower.params()[name] for name in tower.inputs})
        self.assertEqual(report["status"], "pass")
        self.assertEqual(report["layers"], 1)
        self.assertFalse(report["head"])
        self.assertEqual(report["case"], "fp16-b1-l1-default")
        with_head = tilec.workload("vit", precision="fp16", layers=2)
        self.assertNotEqual(tower.json(), with_head.json())
        with self.assertRaisesRegex(tilec.Error, r"^workload: layers 0 must be >= 1$"):
            tilec.workload("vit", layers=0)
        with self.assertRaisesRegex(tilec.Error, "workload 'mlp': layers and head are options of workloads"):
            tilec.workload("mlp", layers=2)

    def test_fp16_partials_by_keyword(self):
        graph = tilec.workload("mlp", precision="fp8")
        x = graph.params()["x"]
        plain = graph.compile(target="ipu21:16")
        half = graph.compile(target="ipu21:16", fp16_partials=True)
        _, plain_report = plain.run({"x": x})
        _, half_report = half.run({"x": x})
        self.assertEqual(plain_report["case"], "fp8-b1-n1-default")
        self.assertEqual(half_report["case"], "fp8-b1-n1-default-fp16-partials")
        self.assertTrue(half_report["bitExact"])
        self.assertIn("fp16 partial sums anywhere", half_report["key"]["options"])
        self.assertNotIn("fp16 partial sums anywhere", plain_report["key"]["options"])

    def test_fp8_outputs_as_floats_or_codes(self):
        graph = tilec.workload("mlp", precision="fp8")
        floats = graph.params()
        codes = graph.params(fp8="codes")
        self.assertEqual(codes["W1"].dtype, np.uint8)
        self.assertEqual(floats["W1"].dtype, np.float32)
        # The same tensor: the codes fed back give the same reference.
        a = tilec.reference(graph, {"x": floats["x"]})["y"]
        b = tilec.reference(graph, {"x": codes["x"]}, params={"W1": codes["W1"]})["y"]
        np.testing.assert_array_equal(a, b)

    def test_onnx_model_built_here(self):
        path = os.path.join(TMP, "python_linear.onnx")
        w, b = linear_model(path)
        graph = tilec.load(path)
        self.assertEqual(set(graph.parameters), {"w", "b"})
        x = np.random.default_rng(5).standard_normal((16, 16)).astype(np.float32)
        expected = np.maximum(x @ w + b, 0)
        host = tilec.reference(graph, {"x": x})["y"]
        np.testing.assert_allclose(host, expected, rtol=1e-5, atol=1e-5)
        # The compiler plans no relu yet: compile says so in one line.
        with self.assertRaisesRegex(tilec.Error, "^op 'y': the compiler does not plan relu ops") as raised:
            graph.compile(target="ipu21:16")
        self.assertNotIn("\n", str(raised.exception))

    def test_onnx_linear_layer_runs_on_the_device(self):
        path = os.path.join(TMP, "python_bias.onnx")
        w = np.random.default_rng(8).standard_normal((16, 32)).astype(np.float32) * 0.25
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])], "bias",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])],
            [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.full(32, 0.5, np.float32), "b")])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        x = np.random.default_rng(9).standard_normal((16, 16)).astype(np.float32)
        outputs, report = tilec.load(path).compile(target="ipu21:16").run({"x": x})
        self.assertEqual(report["status"], "pass")
        np.testing.assert_allclose(outputs["y"], x @ w + 0.5, rtol=1e-4, atol=1e-4)

    def test_dynamic_dimension_fixed_by_shapes(self):
        path = os.path.join(TMP, "python_dynamic.onnx")
        linear_model(path, dynamic=True)
        with self.assertRaisesRegex(tilec.Error, r"input 'x' axis 0 \('batch'\) is dynamic"):
            tilec.load(path)
        graph = tilec.load(path, shapes={"x": [4, 16]})
        self.assertEqual(graph.inputs["x"], "f32[4,16]")

    def test_bad_input_raises_one_line(self):
        path = os.path.join(TMP, "python_linear2.onnx")
        linear_model(path)
        graph = tilec.load(path)
        bad = {
            "shape": ({"x": np.zeros((16, 15), np.float32)}, r"tensor 'x': has shape \[16,15\] but the graph needs \[16,16\]"),
            "dtype": ({"x": np.zeros((16, 16), np.int32)}, r"tensor 'x': has dtype int32"),
            "name": ({"z": np.zeros((16, 16), np.float32)}, r"input 'z': the graph has no such input"),
            "missing": ({}, r"input 'x': no array given for it"),
            "array": ({"x": [[1.0]]}, r"tensor 'x': must be a NumPy array"),
        }
        for case, (inputs, message) in bad.items():
            with self.subTest(case):
                with self.assertRaisesRegex(tilec.Error, message) as raised:
                    tilec.reference(graph, inputs)
                self.assertNotIn("\n", str(raised.exception))
        with self.assertRaisesRegex(tilec.Error, "unknown workload"):
            tilec.workload("nope")
        with self.assertRaisesRegex(tilec.Error, "is not an ONNX model"):
            truncated = os.path.join(TMP, "python_truncated.onnx")
            with open(path, "rb") as source, open(truncated, "wb") as target:
                target.write(source.read()[:50])
            tilec.load(truncated)
        with self.assertRaisesRegex(tilec.Error, "fp8"):
            tilec.reference(graph, {"x": np.zeros((16, 16), np.float32)}, fp8="bytes")
        # Values of the right Python type but out of range, and the wrong
        # containers: tilec.Error too, never a TypeError or a wrapped budget.
        wrong = {
            "negative budget": (lambda: graph.compile(target="ipu21:16", budget_kib=-1),
                                r"^budget_kib -1: must be from 0 \(the whole tile\) to the tile's 624 KiB$"),
            "budget past 4 GiB": (lambda: graph.compile(target="ipu21:16", budget_kib=4194304),
                                  r"^budget_kib 4194304: must be from 0"),
            "negative seed": (lambda: tilec.workload("mlp", seed=-1), r"^seed -1: must be >= 0$"),
            "inputs not a dict": (lambda: tilec.reference(graph, None),
                                  r"^inputs: must be a dict of name -> NumPy array, not NoneType$"),
            "params not a dict": (lambda: tilec.reference(graph, {"x": np.zeros((16, 16), np.float32)}, params=[1]),
                                  r"^params: must be a dict of name -> NumPy array, not list$"),
        }
        for case, (call, message) in wrong.items():
            with self.subTest(case):
                with self.assertRaisesRegex(tilec.Error, message):
                    call()


if __name__ == "__main__":
    unittest.main()
