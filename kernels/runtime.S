# The fixed part of the kernel library, assembled once per compile by the
# compile_runtime stage: kernels whose code does not depend on the plan.
.section .kernels, "x"
