# Split-column row kernels, part 3 (optional): merge n slots of statistics
# records (row_stats.S's layout) into one slot, in slot order, as the apply
# kernels combine them (docs/kernels.md, "Split-column row kernels"). The
# apply kernels then combine fewer slots: a tile can merge its own slots
# before the exchange, or the slots it receives before applying them.
#
#   layernorm_merge: per row, over slots i with counts n_i (FP32) and N:
#       S = sum fma(mean_i, n_i, .) from +0, mean = S / N (correctly
#       rounded), M2 = Q then fma(n_i (mean_i - mean), mean_i - mean, .)
#       with Q = sum M2_i from +0; the merged slot holds mean and M2 (of N
#       columns)
#   softmax_merge: M = max m_i from -inf, L = sum fma(l_i, exp(m_i - M), .)
#       from +0; the merged slot holds M and L
#
# Workers take quads of 4 rows (quad q: rows 4q .. 4q + 3, whose records
# sit (q >> 1) 64 + (q & 1) 16 bytes into the slot, the second statistic
# 32 bytes further), so one panel keeps four workers busy.
#
# Argument block ($m0), one per worker:
#   +0  quads        this worker's (0: nothing to do)
#   +4  first quad   its first quad's number in the block
#   +8  slots n (>= 1)
#   +12 statistics   slot 0's first record (the block's half panel 0)
#   +16 slot stride  bytes from one slot's records to the next's
#   +20 output       the merged slot's first record
#   layernorm:
#   +24 counts: n FP32 values, each slot's column count
#   +28 N: the row's columns, the sum of the counts (1 <= N < 2^23)
#
# Registers: $m1 the quad  $m2 quads left  $m3 n - 1  $m4 statistics
#   $m5 output  $m6 slot stride  $m7 the quad's offset in a slot
#   $m8 record walk  $m9 output of the quad  $m10 counts walk
#   $m13/$m14 FP32 bits of 1/N and -N (softmax: $m13 -inf);
#   layernorm: $a0 n_i (splat to $a0:3)  $a4:7 mean_i, then d  $a8:11 Q,
#   then M2  $a12:15 M2_i, then d n_i  $a16:19 S  $a20:23 mean
#   $a24:27 1/N  $a28:31 -N; softmax: $a0:3 M  $a8:11 L  $a4:7 m_i
#   $a12:15 l_i

# $m7 = (q >> 1) 64 + (q & 1) 16 = (q >> 1) 32 + q 16.
.macro MERGE_QUAD_OFFSET
    shri $m7, $m1, 1
    shli $m7, $m7, 5
    shli $m9, $m1, 4
    add $m7, $m7, $m9
.endm

.macro MERGE_NEXT name
    addi $m1, $m1, 1
    addi $m2, $m2, -1
    brnz $m2, \name\()_quad
.endm

.macro LAYERNORM_MERGE name
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    ldw $m2, $m0, 0
    brz $m2, \name\()_done
    ldw $m1, $m0, 4
    ldw $m4, $m0, 12
    ldw $m6, $m0, 16
    ldw $m5, $m0, 20
    ldw $m3, $m0, 28
    WIDTH_CONSTANTS
    ldw $m3, $m0, 8
    movma $a24, $m13
    { movma $a28, $m14 ; f32v4splat $a24:27, $a24 }
    { addi $m3, $m3, -1 ; f32v4splat $a28:31, $a28 }
\name\()_quad:
    MERGE_QUAD_OFFSET
    # S and Q over the slots: 4 bundles a slot (its 4 main instructions).
    { add $m8, $m4, $m7 ; f32v4zero $a16:19 }
    { ldw $m10, $m0, 24 ; f32v4zero $a8:11 }
    ld128 $a4:7, $m8, 0
    ld128 $a12:15, $m8, 32
    ld32pi $a0, $m10, 4
    rpt $m3, 4
    { add $m8, $m8, $m6 ; f32v4splat $a0:3, $a0 }
    { ld128 $a12:15, $m8, 32 ; f32v4add $a8:11, $a8:11, $a12:15 }
    { ld128 $a4:7, $m8, 0 ; f32v4mac $a16:19, $a4:7, $a0:3 }
    ld32pi $a0, $m10, 4
    { add $m8, $m4, $m7 ; f32v4splat $a0:3, $a0 }
    { ldw $m10, $m0, 24 ; f32v4add $a8:11, $a8:11, $a12:15 }
    { ld32pi $a0, $m10, 4 ; f32v4mac $a16:19, $a4:7, $a0:3 }
    # mean = S / N (correctly rounded, as DIVIDE_BY_WIDTH), loading mean_0.
    { ld128 $a4:7, $m8, 0 ; f32v4mul $a20:23, $a16:19, $a24:27 }
    f32v4mac $a16:19, $a20:23, $a28:31
    f32v4mac $a20:23, $a16:19, $a24:27
    # M2 from Q: 3 bundles a slot.
    rpt $m3, 3
    { add $m8, $m8, $m6 ; f32v4sub $a4:7, $a4:7, $a20:23 }
    { ld32pi $a0, $m10, 4 ; f32v4muls $a12:15, $a4:7, $a0 }
    { ld128 $a4:7, $m8, 0 ; f32v4mac $a8:11, $a12:15, $a4:7 }
    { add $m9, $m5, $m7 ; f32v4sub $a4:7, $a4:7, $a20:23 }
    { st128 $a20:23, $m9, 0 ; f32v4muls $a12:15, $a4:7, $a0 }
    f32v4mac $a8:11, $a12:15, $a4:7
    st128 $a8:11, $m9, 32
    MERGE_NEXT \name
\name\()_done:
    exit
.size \name, . - \name
.endm

.macro SOFTMAX_MERGE name
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    ldw $m2, $m0, 0
    brz $m2, \name\()_done
    ldw $m1, $m0, 4
    ldw $m3, $m0, 8
    ldw $m4, $m0, 12
    ldw $m6, $m0, 16
    ldw $m5, $m0, 20
    addi $m3, $m3, -1
    setzi $m13, 0
    sethi $m13, 0xff80               # -inf
\name\()_quad:
    MERGE_QUAD_OFFSET
    # M over the slots: 2 bundles a slot.
    add $m8, $m4, $m7
    movma $a0, $m13
    { ld128 $a4:7, $m8, 0 ; f32v4splat $a0:3, $a0 }
    rpt $m3, 2
    { add $m8, $m8, $m6 ; f32v4max $a0:3, $a0:3, $a4:7 }
    ld128 $a4:7, $m8, 0
    { add $m8, $m4, $m7 ; f32v4max $a0:3, $a0:3, $a4:7 }
    # L: 3 bundles a slot.
    { ld128 $a4:7, $m8, 0 ; f32v4zero $a8:11 }
    rpt $m3, 3
    { ld128 $a12:15, $m8, 32 ; f32v4sub $a4:7, $a4:7, $a0:3 }
    { add $m8, $m8, $m6 ; f32v4exp $a4:7, $a4:7 }
    { ld128 $a4:7, $m8, 0 ; f32v4mac $a8:11, $a12:15, $a4:7 }
    { ld128 $a12:15, $m8, 32 ; f32v4sub $a4:7, $a4:7, $a0:3 }
    { add $m9, $m5, $m7 ; f32v4exp $a4:7, $a4:7 }
    { st128 $a0:3, $m9, 0 ; f32v4mac $a8:11, $a12:15, $a4:7 }
    st128 $a8:11, $m9, 32
    MERGE_NEXT \name
\name\()_done:
    exit
.size \name, . - \name
.endm
