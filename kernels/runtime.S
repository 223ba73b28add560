# The kernel library's sources, assembled once per compile by the
# compile_runtime stage: this checks every kernel macro before any plan
# instantiates them (compile_kernels instantiates the variants a plan uses;
# docs/kernels.md describes each kernel).
.include "gemm_common.inc"
.include "gemm_f8.S"
.include "gemm_f16.S"
.include "gemm_f32.S"
.include "layernorm.S"
.include "softmax.S"
.include "row_stats.S"
.include "row_apply.S"
.include "row_merge.S"
