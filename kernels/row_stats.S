# Split-column row kernels, part 1: the statistics of each row over the
# columns one tile (one worker) holds, for a row op whose rows are spread
# over several tiles' columns. row_apply.S combines the statistics of every
# part of a row and writes the result (docs/kernels.md, "Split-column row
# kernels").
#
#   layernorm_stats_f32  layernorm_stats_f16   per row, over its c columns:
#       mean = (the sum in column order) / c, correctly rounded, and
#       M2 = the sum of (x - mean)^2 in column order (two passes, as
#       layernorm.S computes them)
#   softmax_stats_f32  softmax_stats_f16       per row, over its c columns:
#       m = the largest value, l = the sum of exp(x - m) in column order
#
# Input: x in the panel format [columns][P panels][16 rows].
#
# Statistics record: per half panel of 8 rows, 16 FP32 values: the 8 rows'
# first statistic (mean or m) then their second (M2 or l), 64 bytes; the
# records of a slot's half panels follow one another (128 bytes a panel).
#
# Argument block ($m0), one per worker (workers take half panels of 8 rows
# and a range of columns; each range writes its own slot):
#   +0  half panels  this worker's (0: nothing to do)
#   +4  columns      c, 1 <= c < 2^23
#   +8  input        address of this worker's first column in its first
#                    half panel
#   +12 input stride   bytes from one column to the next
#   +16 statistics   address of the record of its first half panel
#
# Registers: $m2 half panels left  $m3 c - 1  $m4 input of the half panel
#   $m5 its record  $m6 stride  $m8 input walk  $m1 -inf (softmax)
#   $m13/$m14 FP32 bits of 1/c and -c (layernorm); $a0:7 mean or m,
#   $a8:15 M2 or l, $a16:23 a column, $a24:31 1/c and -c (layernorm)

# Stores a half panel's record and moves to the next half panel.
.macro STATS_STORE name, in_half
    st128 $a0:3, $m5, 0
    st128 $a4:7, $m5, 16
    st128 $a8:11, $m5, 32
    st128 $a12:15, $m5, 48
    addi $m5, $m5, 64
    addi $m4, $m4, \in_half
    addi $m2, $m2, -1
    brnz $m2, \name\()_half
.endm

.macro STATS_ARGUMENTS name
    ldw $m2, $m0, 0
    brz $m2, \name\()_done
    ldw $m3, $m0, 4
    ldw $m4, $m0, 8
    ldw $m6, $m0, 12
    ldw $m5, $m0, 16
.endm

# The mean and M2 with layernorm.S's passes (LN_SUM, LN_SQUARES) and its
# correctly rounded division.
.macro LAYERNORM_STATS name, in, in_half
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    STATS_ARGUMENTS \name
    WIDTH_CONSTANTS
    movma $a24, $m13
    { movma $a28, $m14 ; f32v4splat $a24:27, $a24 }
    f32v4splat $a28:31, $a28
\name\()_half:
    LN_SUM_\in
    DIVIDE_BY_WIDTH $a0:3, $a4:7, $a8:11, $a12:15
    LN_SQUARES_\in
    STATS_STORE \name, \in_half
\name\()_done:
    exit
.size \name, . - \name
.endm

# Pass 1: $a0:7 = the largest value of each row (from -inf).
.macro SPLIT_SM_MAX_F32
    add $m8, $m4, $mzero
    movma $a0, $m1
    { ld128 $a16:19, $m8, 0 ; f32v4splat $a0:3, $a0 }
    { ld128 $a20:23, $m8, 16 ; f32v4mov $a4:7, $a0:3 }
    rpt $m3, 3
    { add $m8, $m8, $m6 ; f32v4max $a0:3, $a0:3, $a16:19 }
    { ld128 $a16:19, $m8, 0 ; f32v4max $a4:7, $a4:7, $a20:23 }
    ld128 $a20:23, $m8, 16
    f32v4max $a0:3, $a0:3, $a16:19
    f32v4max $a4:7, $a4:7, $a20:23
.endm

.macro SPLIT_SM_MAX_F16
    add $m8, $m4, $mzero
    movma $a0, $m1
    { ld128 $a20:23, $m8, 0 ; f32v4splat $a0:3, $a0 }
    f32v4mov $a4:7, $a0:3
    rpt $m3, 4
    { add $m8, $m8, $m6 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4max $a0:3, $a0:3, $a16:19
    { ld128 $a20:23, $m8, 0 ; f32v4max $a4:7, $a4:7, $a20:23 }
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4max $a0:3, $a0:3, $a16:19
    f32v4max $a4:7, $a4:7, $a20:23
.endm

# Pass 2: $a8:15 = the sum of exp(x - m), in column order from +0.
.macro SPLIT_SM_EXP
    f32v4sub $a20:23, $a20:23, $a4:7
    f32v4exp $a16:19, $a16:19
    f32v4exp $a20:23, $a20:23
.endm

.macro SPLIT_SM_SUM_F32
    add $m8, $m4, $mzero
    { ld128 $a16:19, $m8, 0 ; f32v4zero $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4zero $a12:15 }
    rpt $m3, 6
    { add $m8, $m8, $m6 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    SPLIT_SM_EXP
    { ld128 $a16:19, $m8, 0 ; f32v4add $a8:11, $a8:11, $a16:19 }
    { ld128 $a20:23, $m8, 16 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    SPLIT_SM_EXP
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

.macro SPLIT_SM_SUM_F16
    add $m8, $m4, $mzero
    { ld128 $a20:23, $m8, 0 ; f32v4zero $a8:11 }
    f32v4zero $a12:15
    rpt $m3, 8
    { add $m8, $m8, $m6 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    SPLIT_SM_EXP
    f32v4add $a8:11, $a8:11, $a16:19
    { ld128 $a20:23, $m8, 0 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    SPLIT_SM_EXP
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

.macro SOFTMAX_STATS name, in, in_half
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    STATS_ARGUMENTS \name
    addi $m3, $m3, -1
    setzi $m1, 0
    sethi $m1, 0xff80                # -inf
\name\()_half:
    SPLIT_SM_MAX_\in
    SPLIT_SM_SUM_\in
    STATS_STORE \name, \in_half
\name\()_done:
    exit
.size \name, . - \name
.endm
