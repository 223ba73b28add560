# FP8 GEMM on the AMP: C^T block = W^T x X^T, one 16x16 block per job.
#
# The compiler instantiates this macro once per variant (see
# src/compiler/kernel_library.cpp), giving the constants:
#   name        kernel symbol
#   fw, fx      FP8 formats of the weights and the activations (f143 / f152)
#   x_stride    bytes from one k row of the activation panel to the next
#   w_stride    bytes from one k row of the weights to the next (16: packed)
#   out_stride  bytes from one output column (accumulator row) to the next
#   scale       2^scale turns code products into values (scale_w + scale_x)
#   drain       F16 or F32: the type the accumulators are drained to;
#               F32_ADD: added to the FP32 partial sums in the output
#
# Operands, in the panel formats of docs/kernels.md:
#   weights     [k][16 n] FP8 per 16-column block: 16 bytes per k, w_stride
#               from one k to the next
#   activation  [k][panels][16 m] FP8: 16 bytes per (k, panel), x_stride per k
#   output      [n][panels][16 m] of FP16 or FP32: out_stride per n
# Accumulator row r is output column n0 + r, accumulator column c is row
# m0 + c of the panel, so one drained row is 16 consecutive rows of a column.
#
# Argument block ($m0), one per worker:
#   +0  job count        +4  weight base     +8  activation base
#   +12 output base      +16 jobs: {weight offset, activation offset,
#                                   output offset, k steps} x count
#
# Per k step: one 16-byte load of weights, one of activations, two amp.f8
# (256 MACs): each bundle pairs a load with an AMP instruction, so the loop
# runs at the AMP's peak of 128 MACs a cycle.

# Needs the macros of gemm_common.inc, included once before this file.

.macro GEMM_F8 name, fw, fx, x_stride, w_stride, out_stride, scale, drain
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    GEMM_JOBS_BEGIN \name
    ld128pi $a0:3, $m4, \w_stride
    ld128pi $a4:7, $m5, \x_stride
    shri $m9, $m7, 1                 # k pairs
    andi $m10, $m7, 1
    brnz $m10, \name\()_odd
    # Even k: pairs - 1 full iterations, then the last pair without loads.
    addi $m9, $m9, -1
    rpt $m9, 4
    { ld128pi $a8:11, $m4, \w_stride ; amp.f8 $a0:3, $a4:5, 0, \fw, \fx }
    { ld128pi $a12:15, $m5, \x_stride ; amp.f8 $a0:3, $a6:7, 1, \fw, \fx }
    { ld128pi $a0:3, $m4, \w_stride ; amp.f8 $a8:11, $a12:13, 0, \fw, \fx }
    { ld128pi $a4:7, $m5, \x_stride ; amp.f8 $a8:11, $a14:15, 1, \fw, \fx }
    { ld128pi $a8:11, $m4, \w_stride ; amp.f8 $a0:3, $a4:5, 0, \fw, \fx }
    { ld128pi $a12:15, $m5, \x_stride ; amp.f8 $a0:3, $a6:7, 1, \fw, \fx }
    amp.f8 $a8:11, $a12:13, 0, \fw, \fx
    amp.f8 $a8:11, $a14:15, 1, \fw, \fx
    br \name\()_drain
\name\()_odd:
    # Odd k: pairs full iterations, then the last step without loads.
    rpt $m9, 4
    { ld128pi $a8:11, $m4, \w_stride ; amp.f8 $a0:3, $a4:5, 0, \fw, \fx }
    { ld128pi $a12:15, $m5, \x_stride ; amp.f8 $a0:3, $a6:7, 1, \fw, \fx }
    { ld128pi $a0:3, $m4, \w_stride ; amp.f8 $a8:11, $a12:13, 0, \fw, \fx }
    { ld128pi $a4:7, $m5, \x_stride ; amp.f8 $a8:11, $a14:15, 1, \fw, \fx }
    amp.f8 $a0:3, $a4:5, 0, \fw, \fx
    amp.f8 $a0:3, $a6:7, 1, \fw, \fx
\name\()_drain:
    DRAIN_\drain \scale, \out_stride
    GEMM_JOBS_END \name
.endm
