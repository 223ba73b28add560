# The fixed part of the kernel library, assembled once per compile by the
# compile_runtime stage: kernels whose code does not depend on the plan
# (docs/kernels.md describes each).
.section .kernels, "x"
.include "layernorm.S"
.include "softmax.S"
