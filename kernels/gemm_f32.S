# FP32 GEMM on the AMP: C^T block = W^T x X^T, one 16x16 block per job.
# Same jobs, argument block, layouts and drains as gemm_f8.S, with FP32
# operands: weights [k][16 n] (64 bytes per k: quads w0..w3 of 4 columns,
# w_stride from one k to the next),
# activations [k][panels][16 m] (64 bytes per (k, panel): quads x0..x3).
#
# Per k step: sixteen amp.f32 (16 x 16 = 256 MACs), one per bundle: the
# AMP's peak of 16 MACs a cycle. Eight loads per step fit beside them: each
# quad is reloaded in the bundle of its last use (operands are read before
# results are written). w3 is used last, so the next step's w3 is loaded in
# that step's first bundle.
#   $a0:3  w0   $a4:7  w1   $a8:11  w2   $a12:15  w3
#   $a16:19 x0  $a20:23 x1  $a24:27 x2  $a28:31  x3

# Needs the macros of gemm_common.inc, included once before this file.

# One k step, loading the next step's operands as it goes.
.macro GEMM_F32_STEP x_stride, w_stride
    { ld128pi $a12:15, $m4, \w_stride - 48 ; amp.f32 $a0:3, $a16:19, 0 }
    amp.f32 $a0:3, $a20:23, 1
    amp.f32 $a0:3, $a24:27, 2
    { ld128pi $a0:3, $m4, 16 ; amp.f32 $a0:3, $a28:31, 3 }
    amp.f32 $a4:7, $a16:19, 4
    amp.f32 $a4:7, $a20:23, 5
    amp.f32 $a4:7, $a24:27, 6
    { ld128pi $a4:7, $m4, 16 ; amp.f32 $a4:7, $a28:31, 7 }
    amp.f32 $a8:11, $a16:19, 8
    amp.f32 $a8:11, $a20:23, 9
    amp.f32 $a8:11, $a24:27, 10
    { ld128pi $a8:11, $m4, 16 ; amp.f32 $a8:11, $a28:31, 11 }
    { ld128pi $a16:19, $m5, 16 ; amp.f32 $a12:15, $a16:19, 12 }
    { ld128pi $a20:23, $m5, 16 ; amp.f32 $a12:15, $a20:23, 13 }
    { ld128pi $a24:27, $m5, 16 ; amp.f32 $a12:15, $a24:27, 14 }
    { ld128pi $a28:31, $m5, \x_stride - 48 ; amp.f32 $a12:15, $a28:31, 15 }
.endm

.macro GEMM_F32_LAST
    { ld128pi $a12:15, $m4, 16 ; amp.f32 $a0:3, $a16:19, 0 }
    amp.f32 $a0:3, $a20:23, 1
    amp.f32 $a0:3, $a24:27, 2
    amp.f32 $a0:3, $a28:31, 3
    amp.f32 $a4:7, $a16:19, 4
    amp.f32 $a4:7, $a20:23, 5
    amp.f32 $a4:7, $a24:27, 6
    amp.f32 $a4:7, $a28:31, 7
    amp.f32 $a8:11, $a16:19, 8
    amp.f32 $a8:11, $a20:23, 9
    amp.f32 $a8:11, $a24:27, 10
    amp.f32 $a8:11, $a28:31, 11
    amp.f32 $a12:15, $a16:19, 12
    amp.f32 $a12:15, $a20:23, 13
    amp.f32 $a12:15, $a24:27, 14
    amp.f32 $a12:15, $a28:31, 15
.endm

.macro GEMM_F32 name, x_stride, w_stride, out_stride, scale, drain
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    GEMM_JOBS_BEGIN \name
    ld128pi $a0:3, $m4, 16
    ld128pi $a4:7, $m4, 16
    ld128pi $a8:11, $m4, 16
    ld128pi $a16:19, $m5, 16
    ld128pi $a20:23, $m5, 16
    ld128pi $a24:27, $m5, 16
    ld128pi $a28:31, $m5, \x_stride - 48
    addi $m9, $m7, -1
    rpt $m9, 16
    GEMM_F32_STEP \x_stride, \w_stride
    GEMM_F32_LAST
    DRAIN_\drain \scale, \out_stride
    GEMM_JOBS_END \name
.endm
