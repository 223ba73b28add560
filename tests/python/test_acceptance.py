"""The ONNX issue's acceptance tests: a ViT-style encoder from ONNX, and the SigLIP MLP round trip."""
import json
import os
import tempfile
import unittest

import numpy as np

import tilec
import vit_onnx
import mlp_onnx

TMP = os.environ.get("TEST_TMPDIR", tempfile.gettempdir())


class VitEncoderTest(unittest.TestCase):
    """Test 1: two layers, 40 tokens, 4 heads, FP32; LayerNormalization at opset 17, decomposed at 13."""

    def check(self, opset):
        params = vit_onnx.weights(2)
        path = os.path.join(TMP, f"vit_opset{opset}.onnx")
        vit_onnx.encoder_model(params, opset, path)
        graph = tilec.load(path)
        kinds = [op["op"] for op in json.loads(graph.json())["ops"]]
        # The exporter's patterns became tilec's own ops.
        self.assertEqual(kinds.count("layernorm"), 4)
        self.assertEqual(kinds.count("attention"), 2)
        self.assertEqual(kinds.count("gelu"), 2)
        self.assertNotIn("transpose", kinds)
        self.assertNotIn("softmax", kinds)
        x = np.random.default_rng(7).standard_normal((1, vit_onnx.TOKENS, vit_onnx.WIDTH)).astype(np.float32)
        host = tilec.reference(graph, {"x": x})["y"]
        expected = vit_onnx.encoder_numpy(params, x)
        np.testing.assert_allclose(host, expected, rtol=0, atol=1e-4)
        # Compiled for 64 tiles and simulated: the same network within 1e-4.
        outputs, report = graph.compile(target="ipu21:64").run({"x": x})
        self.assertEqual(report["status"], "pass")
        self.assertGreater(report["cycles"], 0)
        np.testing.assert_allclose(outputs["y"], expected, rtol=0, atol=1e-4)

    def test_opset17_layer_normalization(self):
        self.check(17)

    def test_opset13_decomposed_layernorm(self):
        self.check(13)


class SiglipMlpRoundTripTest(unittest.TestCase):
    """Test 2: the MLP's JSON graph exported to ONNX and imported back runs as the workload does."""

    def test_same_cycles_and_outputs(self):
        workload = tilec.workload("mlp", precision="fp16", tokens=64, width=128, hidden=256)
        path = os.path.join(TMP, "mlp_round_trip.onnx")
        mlp_onnx.export(workload, path)
        imported = tilec.load(path)
        self.assertEqual(json.loads(imported.json())["ops"], json.loads(workload.json())["ops"])
        x = workload.params()["x"]
        expected, expected_report = workload.compile(target="ipu21:16").run({"x": x})
        outputs, report = imported.compile(target="ipu21:16").run({"x": x})
        self.assertEqual(report["status"], "pass")
        self.assertEqual(report["cycles"], expected_report["cycles"])
        np.testing.assert_array_equal(outputs["y"], expected["y"])


if __name__ == "__main__":
    unittest.main()
