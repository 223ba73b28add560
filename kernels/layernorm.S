# LayerNorm over the C columns of whole rows, in the panel format:
#   out = (x - mean) / sqrt(var + epsilon) * gamma + beta   per row,
# computed in FP32 exactly as numerics/reference_ops.cpp computes it (the
# mean and the variance by two passes in column order, each division
# correctly rounded), so FP32 results are bit-identical to the host's.
#
# One kernel per input and output type (FP16 or FP32):
#   layernorm_f32_f32  layernorm_f16_f32  layernorm_f32_f16  layernorm_f16_f16
#
# Operands: x and out in the panel format [C columns][P panels][16 rows]
# (column stride = P x 16 x element bytes); gamma and beta as C pairs of
# FP32 {gamma[c], beta[c]} (8 bytes per column).
#
# Argument block ($m0), one per worker (workers take half panels of 8 rows):
#   +0  half panels  this worker's (0: nothing to do)
#   +4  columns      C, 1 <= C < 2^23
#   +8  input        address of column 0 of this worker's first half panel
#   +12 output       likewise for the output
#   +16 input stride   bytes from one column to the next
#   +20 output stride
#   +24 gamma/beta   address of the {gamma, beta} pairs of the output's columns
#   +28 epsilon      FP32
#   +32 output columns  C', 1 <= C' <= C: the output holds columns
#                    [c0, c0 + C') of the result (the statistics still
#                    cover all C), so tiles can share a row's columns
#   +36 c0 x input stride  bytes from the input's column 0 to column c0
#
# Each half panel (8 rows, in FP32 lanes $a..:quad pairs) takes three
# passes over the C columns: the sum (mean), the squared deviations
# (variance), and the output. Registers:
#   $m2 half panels left  $m3 C - 1  $m4/$m5 input/output of the half panel
#   $m6/$m7 strides  $m8/$m9/$m10 input/output/gamma walk
#   $m11 C' - 1  $m12 c0 x input stride  $m13/$m14 FP32 bits of 1/C and -C
#   $a0:7 mean  $a8:15 sums, then 1/sqrt(var + epsilon)  $a16:23 a column
#   of x  $a24:31 results (gamma, beta in $a28:29), earlier 1/C and -C

# $m13 = 1/C and $m14 = -C as FP32 bits (C from $m3, which becomes C - 1).
# C as FP32 is (2^23 + C) - 2^23, both exact below 2^23. Uses the zero
# lanes a worker starts with.
.macro WIDTH_CONSTANTS
    setzi $m13, 0
    sethi $m13, 0x4b00               # 2^23
    or $m14, $m13, $m3
    movma $a0, $m14
    movma $a4, $m13
    f32v4sub $a0:3, $a0:3, $a4:7     # lane 0: C
    f32v4recip $a8:11, $a0:3
    f32v4zero $a12:15
    { movam $m13, $a8 ; f32v4sub $a12:15, $a12:15, $a0:3 }
    { movam $m14, $a12 ; fnop }
    addi $m3, $m3, -1
.endm

# q = s / C, correctly rounded (s is clobbered): q0 = s r, then the exact
# residual s - q0 C by a fused multiply-add, and q = q0 + residual r
# (r = 1/C rounded: Markstein's correction). 1/C in $a24:27, -C in $a28:31.
.macro DIVIDE_BY_WIDTH q0, q1, s0, s1
    f32v4mul \q0, \s0, $a24:27
    f32v4mul \q1, \s1, $a24:27
    f32v4mac \s0, \q0, $a28:31
    f32v4mac \s1, \q1, $a28:31
    f32v4mac \q0, \s0, $a24:27
    f32v4mac \q1, \s1, $a24:27
.endm

# Pass 1: $a8:15 = the sum of the C columns, in column order.
.macro LN_SUM_F32
    add $m8, $m4, $mzero
    { ld128 $a16:19, $m8, 0 ; f32v4zero $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4zero $a12:15 }
    rpt $m3, 3
    { add $m8, $m8, $m6 ; f32v4add $a8:11, $a8:11, $a16:19 }
    { ld128 $a16:19, $m8, 0 ; f32v4add $a12:15, $a12:15, $a20:23 }
    ld128 $a20:23, $m8, 16
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

# FP16 columns: 8 rows in one quad ($a20:23), widened to $a16:23.
.macro LN_SUM_F16
    add $m8, $m4, $mzero
    { ld128 $a20:23, $m8, 0 ; f32v4zero $a8:11 }
    f32v4zero $a12:15
    rpt $m3, 4
    { add $m8, $m8, $m6 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4add $a8:11, $a8:11, $a16:19
    { ld128 $a20:23, $m8, 0 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

# Pass 2: $a8:15 = the sum of (x - mean)^2, in column order.
.macro LN_SQUARES_STEP
    f32v4sub $a20:23, $a20:23, $a4:7
    f32v4mul $a16:19, $a16:19, $a16:19
    f32v4mul $a20:23, $a20:23, $a20:23
.endm

.macro LN_SQUARES_F32
    add $m8, $m4, $mzero
    { ld128 $a16:19, $m8, 0 ; f32v4zero $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4zero $a12:15 }
    rpt $m3, 6
    { add $m8, $m8, $m6 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    LN_SQUARES_STEP
    { ld128 $a16:19, $m8, 0 ; f32v4add $a8:11, $a8:11, $a16:19 }
    { ld128 $a20:23, $m8, 16 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    LN_SQUARES_STEP
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

.macro LN_SQUARES_F16
    add $m8, $m4, $mzero
    { ld128 $a20:23, $m8, 0 ; f32v4zero $a8:11 }
    f32v4zero $a12:15
    rpt $m3, 8
    { add $m8, $m8, $m6 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    LN_SQUARES_STEP
    f32v4add $a8:11, $a8:11, $a16:19
    { ld128 $a20:23, $m8, 0 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    LN_SQUARES_STEP
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

# Pass 3: out = ((x - mean) * inv) * gamma + beta, column by column. The
# loop is rotated: an iteration finishes column j (loading its gamma and
# beta), loads column j + 1 and subtracts the mean from it; $m9 runs one
# column behind the stores.
.macro LN_OUTPUT_START_F32
    add $m8, $m4, $m12
    { sub $m9, $m5, $m7 ; fnop }
    ld128 $a16:19, $m8, 0
    { ld128 $a20:23, $m8, 16 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    { ldw $m10, $m0, 24 ; f32v4sub $a20:23, $a20:23, $a4:7 }
.endm

.macro LN_OUTPUT_START_F16
    add $m8, $m4, $m12
    { sub $m9, $m5, $m7 ; fnop }
    ld128 $a20:23, $m8, 0
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    { ldw $m10, $m0, 24 ; f32v4sub $a20:23, $a20:23, $a4:7 }
.endm

# The scaling common to every output loop: (x - mean) * inv * gamma.
.macro LN_SCALE
    { ld64pi $a28:29, $m10, 8 ; f32v4mul $a16:19, $a16:19, $a8:11 }
    { add $m8, $m8, $m6 ; f32v4mul $a20:23, $a20:23, $a12:15 }
    { add $m9, $m9, $m7 ; f32v4muls $a16:19, $a16:19, $a28 }
    f32v4muls $a20:23, $a20:23, $a28
.endm

.macro LN_OUTPUT_F32_F32
    LN_OUTPUT_START_F32
    rpt $m11, 8
    LN_SCALE
    { ld128 $a16:19, $m8, 0 ; f32v4adds $a24:27, $a16:19, $a29 }
    { ld128 $a20:23, $m8, 16 ; f32v4adds $a28:31, $a20:23, $a29 }
    { st128 $a24:27, $m9, 0 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    { st128 $a28:31, $m9, 16 ; f32v4sub $a20:23, $a20:23, $a4:7 }
    LN_SCALE
    f32v4adds $a24:27, $a16:19, $a29
    f32v4adds $a28:31, $a20:23, $a29
    st128 $a24:27, $m9, 0
    st128 $a28:31, $m9, 16
.endm

.macro LN_OUTPUT_F16_F32
    LN_OUTPUT_START_F16
    rpt $m11, 10
    LN_SCALE
    f32v4adds $a24:27, $a16:19, $a29
    { ld128 $a20:23, $m8, 0 ; f32v4adds $a28:31, $a20:23, $a29 }
    { st128 $a24:27, $m9, 0 ; f16tof32lo $a16:19, $a20:23 }
    { st128 $a28:31, $m9, 16 ; f16tof32hi $a20:23, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    LN_SCALE
    f32v4adds $a24:27, $a16:19, $a29
    f32v4adds $a28:31, $a20:23, $a29
    st128 $a24:27, $m9, 0
    st128 $a28:31, $m9, 16
.endm

.macro LN_OUTPUT_F32_F16
    LN_OUTPUT_START_F32
    rpt $m11, 10
    LN_SCALE
    { ld128 $a16:19, $m8, 0 ; f32v4adds $a24:27, $a16:19, $a29 }
    { ld128 $a20:23, $m8, 16 ; f32v4adds $a28:31, $a20:23, $a29 }
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    { st128 $a24:27, $m9, 0 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    f32v4sub $a20:23, $a20:23, $a4:7
    LN_SCALE
    f32v4adds $a24:27, $a16:19, $a29
    f32v4adds $a28:31, $a20:23, $a29
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    st128 $a24:27, $m9, 0
.endm

.macro LN_OUTPUT_F16_F16
    LN_OUTPUT_START_F16
    rpt $m11, 12
    LN_SCALE
    f32v4adds $a24:27, $a16:19, $a29
    { ld128 $a20:23, $m8, 0 ; f32v4adds $a28:31, $a20:23, $a29 }
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    { st128 $a24:27, $m9, 0 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    LN_SCALE
    f32v4adds $a24:27, $a16:19, $a29
    f32v4adds $a28:31, $a20:23, $a29
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    st128 $a24:27, $m9, 0
.endm

.macro LAYERNORM name, in, out, in_half, out_half
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    ldw $m2, $m0, 0
    ldw $m3, $m0, 4
    ldw $m4, $m0, 8
    ldw $m5, $m0, 12
    ldw $m6, $m0, 16
    ldw $m7, $m0, 20
    ldw $m11, $m0, 32
    ldw $m12, $m0, 36
    brz $m2, \name\()_done
    addi $m11, $m11, -1
    WIDTH_CONSTANTS
\name\()_half:
    movma $a24, $m13
    { movma $a28, $m14 ; f32v4splat $a24:27, $a24 }
    f32v4splat $a28:31, $a28
    LN_SUM_\in
    DIVIDE_BY_WIDTH $a0:3, $a4:7, $a8:11, $a12:15
    LN_SQUARES_\in
    DIVIDE_BY_WIDTH $a16:19, $a20:23, $a8:11, $a12:15
    ld32 $a8, $m0, 28                # epsilon
    f32v4adds $a16:19, $a16:19, $a8
    f32v4adds $a20:23, $a20:23, $a8
    f32v4rsqrt $a8:11, $a16:19
    f32v4rsqrt $a12:15, $a20:23
    LN_OUTPUT_\in\()_\out
    addi $m4, $m4, \in_half
    addi $m5, $m5, \out_half
    addi $m2, $m2, -1
    brnz $m2, \name\()_half
\name\()_done:
    exit
.size \name, . - \name
.endm
