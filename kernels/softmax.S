# Softmax over the C columns of whole rows, in the panel format:
#   out = exp(x - max) / sum(exp(x - max))   per row,
# computed in FP32 as numerics/reference_ops.cpp computes it (the largest
# value, then exponentials summed in column order), except that the last
# step multiplies by the reciprocal of the sum (within an FP32 ulp of the
# division).
#
# One kernel per input and output type (FP16 or FP32):
#   softmax_f32_f32  softmax_f16_f32  softmax_f32_f16  softmax_f16_f16
#
# Operands: x and out in the panel format [C columns][P panels][16 rows]
# (column stride = P x 16 x element bytes).
#
# Argument block ($m0), one per worker (workers take half panels of 8
# rows): the first six words of layernorm's:
#   +0  half panels   +4 columns C (>= 1)   +8 input   +12 output
#   +16 input stride   +20 output stride
#   +24 output columns C' and +28 c0 x input stride, as layernorm's +32
#   and +36: the output holds columns [c0, c0 + C') of the result
#
# Each half panel (8 rows in FP32 lanes) takes three passes over the C
# columns: the largest value, the sum of exponentials, the output.
# Registers: $m1 -inf (FP32 bits)  $m2 half panels left  $m3 C - 1
#   $m11 C' - 1  $m12 c0 x input stride
#   $m4/$m5 input/output of the half panel  $m6/$m7 strides
#   $m8/$m9 input/output walk  $a0:7 the largest values  $a8:15 the sums,
#   then their reciprocals  $a16:23 a column of x  $a24:31 results

# Pass 1: $a0:7 = the largest value of each row.
.macro SM_MAX_F32
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

.macro SM_MAX_F16
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

# Pass 2: $a8:15 = the sum of exp(x - max), in column order.
.macro SM_EXP
    f32v4sub $a20:23, $a20:23, $a4:7
    f32v4exp $a16:19, $a16:19
    f32v4exp $a20:23, $a20:23
.endm

.macro SM_SUM_F32
    add $m8, $m4, $mzero
    { ld128 $a16:19, $m8, 0 ; f32v4zero $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4zero $a12:15 }
    rpt $m3, 6
    { add $m8, $m8, $m6 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    SM_EXP
    { ld128 $a16:19, $m8, 0 ; f32v4add $a8:11, $a8:11, $a16:19 }
    { ld128 $a20:23, $m8, 16 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    SM_EXP
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

.macro SM_SUM_F16
    add $m8, $m4, $mzero
    { ld128 $a20:23, $m8, 0 ; f32v4zero $a8:11 }
    f32v4zero $a12:15
    rpt $m3, 8
    { add $m8, $m8, $m6 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    SM_EXP
    f32v4add $a8:11, $a8:11, $a16:19
    { ld128 $a20:23, $m8, 0 ; f32v4add $a12:15, $a12:15, $a20:23 }
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    SM_EXP
    f32v4add $a8:11, $a8:11, $a16:19
    f32v4add $a12:15, $a12:15, $a20:23
.endm

# Pass 3: out = exp(x - max) * (1 / sum), column by column; rotated as
# layernorm's output loop ($m9 runs one column behind the stores).
.macro SM_OUTPUT_START_F32
    add $m8, $m4, $m12
    { sub $m9, $m5, $m7 ; fnop }
    ld128 $a16:19, $m8, 0
    { ld128 $a20:23, $m8, 16 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    f32v4sub $a20:23, $a20:23, $a4:7
.endm

.macro SM_OUTPUT_START_F16
    add $m8, $m4, $m12
    { sub $m9, $m5, $m7 ; fnop }
    ld128 $a20:23, $m8, 0
    f16tof32lo $a16:19, $a20:23
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
.endm

.macro SM_SCALE_EXP
    { add $m8, $m8, $m6 ; f32v4exp $a16:19, $a16:19 }
    { add $m9, $m9, $m7 ; f32v4exp $a20:23, $a20:23 }
.endm

.macro SM_OUTPUT_F32_F32
    SM_OUTPUT_START_F32
    rpt $m11, 6
    SM_SCALE_EXP
    { ld128 $a16:19, $m8, 0 ; f32v4mul $a24:27, $a16:19, $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    { st128 $a24:27, $m9, 0 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    { st128 $a28:31, $m9, 16 ; f32v4sub $a20:23, $a20:23, $a4:7 }
    SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    st128 $a24:27, $m9, 0
    st128 $a28:31, $m9, 16
.endm

.macro SM_OUTPUT_F16_F32
    SM_OUTPUT_START_F16
    rpt $m11, 8
    SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    { ld128 $a20:23, $m8, 0 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    { st128 $a24:27, $m9, 0 ; f16tof32lo $a16:19, $a20:23 }
    { st128 $a28:31, $m9, 16 ; f16tof32hi $a20:23, $a20:23 }
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    st128 $a24:27, $m9, 0
    st128 $a28:31, $m9, 16
.endm

.macro SM_OUTPUT_F32_F16
    SM_OUTPUT_START_F32
    rpt $m11, 8
    SM_SCALE_EXP
    { ld128 $a16:19, $m8, 0 ; f32v4mul $a24:27, $a16:19, $a8:11 }
    { ld128 $a20:23, $m8, 16 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    { st128 $a24:27, $m9, 0 ; f32v4sub $a16:19, $a16:19, $a0:3 }
    f32v4sub $a20:23, $a20:23, $a4:7
    SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    st128 $a24:27, $m9, 0
.endm

.macro SM_OUTPUT_F16_F16
    SM_OUTPUT_START_F16
    rpt $m11, 10
    SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    { ld128 $a20:23, $m8, 0 ; f32v4mul $a28:31, $a20:23, $a12:15 }
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    { st128 $a24:27, $m9, 0 ; f16tof32lo $a16:19, $a20:23 }
    f16tof32hi $a20:23, $a20:23
    f32v4sub $a16:19, $a16:19, $a0:3
    f32v4sub $a20:23, $a20:23, $a4:7
    SM_SCALE_EXP
    f32v4mul $a24:27, $a16:19, $a8:11
    f32v4mul $a28:31, $a20:23, $a12:15
    f32tof16 $a24:25, $a24:27
    f32tof16 $a26:27, $a28:31
    st128 $a24:27, $m9, 0
.endm

.macro SOFTMAX name, in, out, in_half, out_half
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
    ldw $m11, $m0, 24
    ldw $m12, $m0, 28
    brz $m2, \name\()_done
    addi $m11, $m11, -1
    addi $m3, $m3, -1
    setzi $m1, 0
    sethi $m1, 0xff80                # -inf
\name\()_half:
    SM_MAX_\in
    SM_SUM_\in
    f32v4recip $a8:11, $a8:11
    f32v4recip $a12:15, $a12:15
    SM_OUTPUT_\in\()_\out
    addi $m4, $m4, \in_half
    addi $m5, $m5, \out_half
    addi $m2, $m2, -1
    brnz $m2, \name\()_half
\name\()_done:
    exit
.size \name, . - \name
.endm
