# FP16 GEMM on the AMP: C^T block = W^T x X^T, one 16x16 block per job.
# Same jobs, argument block, layouts and drains as gemm_f8.S, with FP16
# operands: weights [k][16 n] (32 bytes per k, w_stride from one k to the
# next), activations [k][panels][16 m] (32 bytes per (k, panel), x_stride
# per k).
#
# Per k step: four 16-byte loads (two of weights, two of activations) and
# four amp.f16 (4 x 64 = 256 MACs), each load paired with an AMP
# instruction: the AMP's peak of 64 MACs a cycle. Two register sets
# ($a0..$a15 and $a16..$a31) alternate between the step computing and the
# step loading.

# Needs the macros of gemm_common.inc, included once before this file.

# One k step: multiply set (wl, wh, xl, xh), load the next step into
# (nwl, nwh, nxl, nxh).
.macro GEMM_F16_STEP wl, wh, xl, xh, nwl, nwh, nxl, nxh, x_stride, w_stride
    { ld128pi \nwl, $m4, 16 ; amp.f16 \wl, \xl, 0 }
    { ld128pi \nwh, $m4, \w_stride - 16 ; amp.f16 \wl, \xh, 1 }
    { ld128pi \nxl, $m5, 16 ; amp.f16 \wh, \xl, 2 }
    { ld128pi \nxh, $m5, \x_stride - 16 ; amp.f16 \wh, \xh, 3 }
.endm

.macro GEMM_F16_LAST wl, wh, xl, xh
    amp.f16 \wl, \xl, 0
    amp.f16 \wl, \xh, 1
    amp.f16 \wh, \xl, 2
    amp.f16 \wh, \xh, 3
.endm

.macro GEMM_F16 name, x_stride, w_stride, out_stride, scale, drain
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    GEMM_JOBS_BEGIN \name
    ld128pi $a0:3, $m4, 16
    ld128pi $a4:7, $m4, \w_stride - 16
    ld128pi $a8:11, $m5, 16
    ld128pi $a12:15, $m5, \x_stride - 16
    shri $m9, $m7, 1
    andi $m10, $m7, 1
    brnz $m10, \name\()_odd
    addi $m9, $m9, -1
    rpt $m9, 8
    GEMM_F16_STEP $a0:3, $a4:7, $a8:11, $a12:15, $a16:19, $a20:23, $a24:27, $a28:31, \x_stride, \w_stride
    GEMM_F16_STEP $a16:19, $a20:23, $a24:27, $a28:31, $a0:3, $a4:7, $a8:11, $a12:15, \x_stride, \w_stride
    GEMM_F16_STEP $a0:3, $a4:7, $a8:11, $a12:15, $a16:19, $a20:23, $a24:27, $a28:31, \x_stride, \w_stride
    GEMM_F16_LAST $a16:19, $a20:23, $a24:27, $a28:31
    br \name\()_drain
\name\()_odd:
    rpt $m9, 8
    GEMM_F16_STEP $a0:3, $a4:7, $a8:11, $a12:15, $a16:19, $a20:23, $a24:27, $a28:31, \x_stride, \w_stride
    GEMM_F16_STEP $a16:19, $a20:23, $a24:27, $a28:31, $a0:3, $a4:7, $a8:11, $a12:15, \x_stride, \w_stride
    GEMM_F16_LAST $a0:3, $a4:7, $a8:11, $a12:15
\name\()_drain:
    DRAIN_\drain \scale, \out_stride
    GEMM_JOBS_END \name
.endm
