# Split-column row kernels, part 2: combine the statistics of every part of
# a row (row_stats.S's records, one slot per part) and write the row op's
# result over the columns this tile holds (docs/kernels.md, "Split-column
# row kernels").
#
#   layernorm_apply_IN_OUT  (f32_f32 f16_f32 f32_f16 f16_f16): per row, over
#       the n slots in slot order (slot i: n_i columns, mean_i, M2_i):
#         S = sum fma(n_i, mean_i, .) from +0, mean = S / N (correctly
#         rounded), Q = sum M2_i from +0, M2 = Q then fma(n_i (mean_i -
#         mean), mean_i - mean, .) slot by slot, var = M2 / N (correctly
#         rounded), inv = 1 / sqrt(var + epsilon); then layernorm.S's output
#         pass: ((x - mean) inv) gamma + beta
#   softmax_apply_IN_OUT: M = max m_i (from -inf), L = sum fma(l_i,
#       exp(m_i - M), .) from +0 in slot order, inv = 1 / L; then
#       out = exp(x - M) inv
#
# Argument block ($m0), one per worker (half panels and a column range):
#   +0  half panels  this worker's (0: nothing to do)
#   +4  columns      c', >= 1: the columns it writes
#   +8  input        its first column of its first half panel
#   +12 output       likewise
#   +16 input stride   bytes from one column to the next
#   +20 output stride
#   layernorm:                           softmax:
#   +24 gamma/beta pairs (its columns)   +24 slots n
#   +28 epsilon (FP32)                   +28 statistics
#   +32 slots n (>= 1)                   +32 slot stride
#   +36 statistics: slot 0's record of its first half panel
#   +40 slot stride: bytes from one slot's record to the next's
#   +44 counts: n FP32 values, each slot's column count n_i
#   +48 N: the row's columns, the sum of the counts (1 <= N < 2^23)
#
# Registers: $m1 the half panel's record in slot 0  $m2 half panels left
#   $m3 n - 1  $m4/$m5 the half panel's input/output  $m6/$m7 strides
#   $m8 record walk  $m9 slot stride (layernorm; softmax: the second
#   statistic's walk)  $m10 counts walk (layernorm; softmax: slot stride)
#   $m11 c' - 1  $m12 0 (layernorm.S's output offset)  $m13/$m14 FP32 bits
#   of 1/N and -N (softmax: $m13 -inf); $a0:7 mean or M, $a8:15 sums, then
#   inv, $a16:31 slots' statistics and temporaries.

# Layernorm pass A: $a16:23 = sum fma(n_i, mean_i), $a8:15 = sum M2_i, then
# $a0:7 = mean (the division's bundles also start pass B: the walk, n_0 and
# mean_0). In the loop $a0 = n_i (splat to $a0:3), $a4:7 / $a24:27 mean_i,
# $a28:31 M2_i, one quad after the other.
.macro SPLIT_LN_MEAN
    { add $m8, $m1, $mzero ; f32v4zero $a16:19 }
    { ldw $m10, $m0, 44 ; f32v4zero $a20:23 }
    { ldw $m9, $m0, 40 ; f32v4zero $a8:11 }
    { ld32pi $a0, $m10, 4 ; f32v4zero $a12:15 }
    ld128 $a4:7, $m8, 0
    ld128 $a24:27, $m8, 16
    ld128 $a28:31, $m8, 32
    rpt $m3, 6
    { ld128 $a28:31, $m8, 48 ; f32v4add $a8:11, $a8:11, $a28:31 }
    { add $m8, $m8, $m9 ; f32v4splat $a0:3, $a0 }
    { ld128 $a28:31, $m8, 32 ; f32v4add $a12:15, $a12:15, $a28:31 }
    { ld128 $a4:7, $m8, 0 ; f32v4mac $a16:19, $a4:7, $a0:3 }
    { ld128 $a24:27, $m8, 16 ; f32v4mac $a20:23, $a24:27, $a0:3 }
    ld32pi $a0, $m10, 4
    { ld128 $a28:31, $m8, 48 ; f32v4add $a8:11, $a8:11, $a28:31 }
    f32v4splat $a0:3, $a0
    f32v4add $a12:15, $a12:15, $a28:31
    { movma $a28, $m14 ; f32v4mac $a16:19, $a4:7, $a0:3 }
    f32v4mac $a20:23, $a24:27, $a0:3
    { movma $a24, $m13 ; f32v4splat $a28:31, $a28 }
    f32v4splat $a24:27, $a24
    # mean = S / N, as DIVIDE_BY_WIDTH $a0:3, $a4:7, $a16:19, $a20:23
    { add $m8, $m1, $mzero ; f32v4mul $a0:3, $a16:19, $a24:27 }
    { ldw $m10, $m0, 44 ; f32v4mul $a4:7, $a20:23, $a24:27 }
    f32v4mac $a16:19, $a0:3, $a28:31
    { ld32pi $a28, $m10, 4 ; f32v4mac $a20:23, $a4:7, $a28:31 }
    { ld128 $a16:19, $m8, 0 ; f32v4mac $a0:3, $a16:19, $a24:27 }
    { ld128 $a20:23, $m8, 16 ; f32v4mac $a4:7, $a20:23, $a24:27 }
.endm

# Layernorm pass B: $a8:15 = Q, then fma(n_i d, d) with d = mean_i - mean
# slot by slot; then 1/N and -N again in $a24:31. In the loop $a16:23
# mean_i, then d; $a24:27 n_i d; $a28 n_i.
.macro SPLIT_LN_SQUARES
    rpt $m3, 6
    { add $m8, $m8, $m9 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    f32v4sub $a20:23, $a20:23, $a4:7
    f32v4muls $a24:27, $a16:19, $a28
    { ld128 $a16:19, $m8, 0 ; f32v4mac $a8:11, $a24:27, $a16:19 }
    { ld32pi $a28, $m10, 4 ; f32v4muls $a24:27, $a20:23, $a28 }
    { ld128 $a20:23, $m8, 16 ; f32v4mac $a12:15, $a24:27, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    f32v4muls $a24:27, $a16:19, $a28
    f32v4mac $a8:11, $a24:27, $a16:19
    f32v4muls $a24:27, $a20:23, $a28
    { movma $a28, $m14 ; f32v4mac $a12:15, $a24:27, $a20:23 }
    { movma $a24, $m13 ; f32v4splat $a28:31, $a28 }
    f32v4splat $a24:27, $a24
.endm

# inv = 1 / sqrt(M2 / N + epsilon) in $a8:15 (the division as
# DIVIDE_BY_WIDTH $a16:19, $a20:23, $a8:11, $a12:15).
.macro SPLIT_LN_INVERSE
    f32v4mul $a16:19, $a8:11, $a24:27
    f32v4mul $a20:23, $a12:15, $a24:27
    f32v4mac $a8:11, $a16:19, $a28:31
    f32v4mac $a12:15, $a20:23, $a28:31
    f32v4mac $a16:19, $a8:11, $a24:27
    { ld32 $a8, $m0, 28 ; f32v4mac $a20:23, $a12:15, $a24:27 }
    f32v4adds $a16:19, $a16:19, $a8
    f32v4adds $a20:23, $a20:23, $a8
    f32v4rsqrt $a8:11, $a16:19
    f32v4rsqrt $a12:15, $a20:23
.endm

# Moves to the next half panel.
.macro SPLIT_NEXT name, in_half, out_half
    addi $m4, $m4, \in_half
    addi $m5, $m5, \out_half
    addi $m1, $m1, 64
    addi $m2, $m2, -1
    brnz $m2, \name\()_half
.endm

.macro LAYERNORM_APPLY name, in, out, in_half, out_half
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    ldw $m2, $m0, 0
    brz $m2, \name\()_done
    ldw $m11, $m0, 4
    ldw $m4, $m0, 8
    ldw $m5, $m0, 12
    ldw $m6, $m0, 16
    ldw $m7, $m0, 20
    ldw $m1, $m0, 36
    ldw $m3, $m0, 48
    WIDTH_CONSTANTS
    ldw $m3, $m0, 32
    addi $m11, $m11, -1
    addi $m3, $m3, -1
\name\()_half:
    SPLIT_LN_MEAN
    SPLIT_LN_SQUARES
    SPLIT_LN_INVERSE
    LN_OUTPUT_\in\()_\out
    SPLIT_NEXT \name, \in_half, \out_half
\name\()_done:
    exit
.size \name, . - \name
.endm

# Softmax pass A: $a0:7 = max m_i from -inf; $a16:19 / $a20:23 m_i.
.macro SPLIT_SM_LARGEST
    add $m8, $m1, $mzero
    movma $a0, $m13
    { ld128 $a16:19, $m8, 0 ; f32v4splat $a0:3, $a0 }
    { ld128 $a20:23, $m8, 16 ; f32v4mov $a4:7, $a0:3 }
    rpt $m3, 3
    { add $m8, $m8, $m10 ; f32v4max $a0:3, $a0:3, $a16:19 }
    { ld128 $a16:19, $m8, 0 ; f32v4max $a4:7, $a4:7, $a20:23 }
    ld128 $a20:23, $m8, 16
    { add $m8, $m1, $mzero ; f32v4max $a0:3, $a0:3, $a16:19 }
    { add $m9, $m1, $mzero ; f32v4max $a4:7, $a4:7, $a20:23 }
.endm

# Softmax pass B: $a8:15 = sum fma(l_i, exp(m_i - M)) from +0, then inv =
# 1 / L. $a16:23 m_i, then its exponentials; $a24:31 l_i ($m9 walks them).
.macro SPLIT_SM_TOTAL
    { ld128 $a16:19, $m8, 0 ; f32v4zero $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4zero $a12:15 }
    rpt $m3, 6
    { ld128 $a24:27, $m9, 32 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    { ld128 $a28:31, $m9, 48 ; f32v4sub $a20:23, $a20:23, $a4:7 }
    { add $m9, $m9, $m10 ; f32v4exp $a16:19, $a16:19 }
    { add $m8, $m8, $m10 ; f32v4exp $a20:23, $a20:23 }
    { ld128 $a16:19, $m8, 0 ; f32v4mac $a8:11, $a24:27, $a16:19 }
    { ld128 $a20:23, $m8, 16 ; f32v4mac $a12:15, $a28:31, $a20:23 }
    { ld128 $a24:27, $m9, 32 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    { ld128 $a28:31, $m9, 48 ; f32v4sub $a20:23, $a20:23, $a4:7 }
    f32v4exp $a16:19, $a16:19
    f32v4exp $a20:23, $a20:23
    f32v4mac $a8:11, $a24:27, $a16:19
    f32v4mac $a12:15, $a28:31, $a20:23
    f32v4recip $a8:11, $a8:11
    f32v4recip $a12:15, $a12:15
.endm

# The output pass: exp(x - M) inv over the c' columns, as softmax.S's
# (rotated: $m9 runs one column behind the stores).
.macro SPLIT_SM_OUTPUT_START_F32
    add $m8, $m4, $mzero
    { sub $m9, $m5, $m7 ; fnop }
    ld128 $a16:19, $m8, 0
    { ld128 $a20:23, $m8, 16 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    f32v4sub $a20:23, $a20:23, $a4:7
.endm

.macro SPLIT_SM_OUTPUT_START_F16
    add $m8, $m4, $mzero
    { sub $m9, $m5, $m7 ; fnop }
    ld128 $a20:23, $m8, 0
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
.endm

.macro SPLIT_SM_SCALE_EXP
    { add $m8, $m8, $m6 ; f32v4exp $a16:19, $a16:19 }
    { add $m9, $m9, $m7 ; f32v4exp $a20:23, $a20:23 }
.endm

.macro SPLIT_SM_OUTPUT_F32_F32
    SPLIT_SM_OUTPUT_START_F32
    rpt $m11, 6
    SPLIT_SM_SCALE_EXP
    { ld128 $a16:19, $m8, 0 ; f32v4mul $a24:27, $a16:19, $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    { st128 $a24:27, $m9, 0 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    { st128 $a28:31, $m9, 16 ; f32v4sub $a20:23, $a20:23, $a4:7 }
    SPLIT_SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    st128 $a24:27, $m9, 0
    st128 $a28:31, $m9, 16
.endm

.macro SPLIT_SM_OUTPUT_F16_F32
    SPLIT_SM_OUTPUT_START_F16
    rpt $m11, 8
    SPLIT_SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    { ld128 $a20:23, $m8, 0 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    { st128 $a24:27, $m9, 0 ; f16tof32lo $a16:19, $a20:23 }
    { st128 $a28:31, $m9, 16 ; f16tof32hi $a20:23, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    SPLIT_SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    st128 $a24:27, $m9, 0
    st128 $a28:31, $m9, 16
.endm

.macro SPLIT_SM_OUTPUT_F32_F16
    SPLIT_SM_OUTPUT_START_F32
    rpt $m11, 8
    SPLIT_SM_SCALE_EXP
    { ld128 $a16:19, $m8, 0 ; f32v4mul $a24:27, $a16:19, $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    { st128 $a24:27, $m9, 0 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    f32v4sub $a20:23, $a20:23, $a4:7
    SPLIT_SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    st128 $a24:27, $m9, 0
.endm

.macro SPLIT_SM_OUTPUT_F16_F16
    SPLIT_SM_OUTPUT_START_F16
    rpt $m11, 10
    SPLIT_SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    { ld128 $a20:23, $m8, 0 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    { st128 $a24:27, $m9, 0 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    SPLIT_SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    st128 $a24:27, $m9, 0
.endm

.macro SOFTMAX_APPLY name, in, out, in_half, out_half
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    ldw $m2, $m0, 0
    brz $m2, \name\()_done
    ldw $m11, $m0, 4
    ldw $m4, $m0, 8
    ldw $m5, $m0, 12
    ldw $m6, $m0, 16
    ldw $m7, $m0, 20
    ldw $m3, $m0, 24
    ldw $m1, $m0, 28
    ldw $m10, $m0, 32
    addi $m11, $m11, -1
    addi $m3, $m3, -1
    setzi $m13, 0
    sethi $m13, 0xff80               # -inf
\name\()_half:
    SPLIT_SM_LARGEST
    SPLIT_SM_TOTAL
    SPLIT_SM_OUTPUT_\in\()_\out
    SPLIT_NEXT \name, \in_half, \out_half
\name\()_done:
    exit
.size \name, . - \name
.endm
